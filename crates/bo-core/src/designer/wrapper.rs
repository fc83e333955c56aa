//! A model around another model — `AUTO`'s chosen candidate with why it was chosen, a large
//! study's subset model with its predictions widened (`subset.rs`). A [`Wrapper`] says what it
//! changes (how much it widens the predictive distributions, what it adds to the description,
//! the memory it holds itself); every other [`Model`] method is the inner model's, forwarded here
//! once, so a method added to `Model` reaches every wrapper.
//!
//! Must not: hold an algorithm. A wrapper that changes how points are proposed is a model of its
//! own.

use std::sync::Arc;

use rand::Rng;

use super::{Criterion, Embeddings, FitError, Model, Prediction, Predictive};
use crate::trial::{Assignment, Observation};

/// A model that is another model with a few changes.
pub(crate) trait Wrapper: Send + Sync + 'static {
    /// The model wrapped.
    fn inner(&self) -> &Arc<dyn Model>;

    /// The same wrapper around `inner` (the inner model conditioned on more trials, or
    /// refactored).
    fn rewrap(&self, inner: Arc<dyn Model>) -> Arc<dyn Model>;

    /// The factor the inner model's predictive distributions are widened by
    /// ([`Predictive::widened`]); `None`: they are the inner model's as they are.
    fn widening(&self) -> Option<f64> {
        None
    }

    /// The description of `GET …/model`, given the inner model's.
    fn describe_around(&self, inner: serde_json::Value) -> serde_json::Value;

    /// The memory the wrapper holds besides the inner model, in bytes.
    fn own_bytes(&self) -> usize;
}

impl<W: Wrapper> Model for W {
    fn suggest(&self, pending: &[Assignment], count: usize, rng: &mut dyn Rng) -> Result<Vec<Assignment>, FitError> {
        self.inner().suggest(pending, count, rng)
    }

    fn runs_out(&self) -> bool {
        self.inner().runs_out()
    }

    fn suggest_indexed(&self, first: u64, count: usize) -> Option<Vec<Assignment>> {
        self.inner().suggest_indexed(first, count)
    }

    fn observe(&self, new: &[Observation]) -> Option<Arc<dyn Model>> {
        Some(self.rewrap(self.inner().observe(new)?))
    }

    fn refactored(&self) -> Option<Arc<dyn Model>> {
        Some(self.rewrap(self.inner().refactored()?))
    }

    fn suggest_in_context(&self, context: &Assignment, pending: &[Assignment], rng: &mut dyn Rng) -> Option<Result<Assignment, FitError>> {
        self.inner().suggest_in_context(context, pending, rng)
    }

    fn predict(&self, points: &[Assignment]) -> Option<Vec<Prediction>> {
        if self.widening().is_some()
            && let Some(widened) = self.predictive(points)
        {
            return Some(widened.iter().map(Predictive::summary).collect());
        }
        self.inner().predict(points)
    }

    fn predictive(&self, points: &[Assignment]) -> Option<Vec<Predictive<'_>>> {
        match self.widening() {
            Some(factor) => Some(self.inner().predictive(points)?.into_iter().map(|p| p.widened(factor)).collect()),
            None => self.inner().predictive(points),
        }
    }

    fn embeddings(&self) -> Option<Embeddings> {
        self.inner().embeddings()
    }

    fn predictive_embedded(&self, embedding: usize, ys: &[Vec<f64>]) -> Option<Vec<Predictive<'_>>> {
        match self.widening() {
            Some(factor) => Some(self.inner().predictive_embedded(embedding, ys)?.into_iter().map(|p| p.widened(factor)).collect()),
            None => self.inner().predictive_embedded(embedding, ys),
        }
    }

    fn predicts_only(&self) -> Option<&'static str> {
        self.inner().predicts_only()
    }

    fn predict_metrics(&self, points: &[Assignment]) -> Option<Vec<(String, Vec<Prediction>)>> {
        self.inner().predict_metrics(points)
    }

    fn term_means(&self, points: &[Assignment]) -> Option<Vec<(String, Vec<f64>)>> {
        self.inner().term_means(points)
    }

    fn self_prediction(&self, criterion: Criterion) -> Option<Vec<f64>> {
        self.inner().self_prediction(criterion)
    }

    fn describe(&self) -> serde_json::Value {
        self.describe_around(self.inner().describe())
    }

    fn memory_bytes(&self) -> usize {
        self.inner().memory_bytes() + self.own_bytes()
    }
}
