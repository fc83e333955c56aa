//! A model around another model — `AUTO`'s chosen candidate with why it was chosen, a large
//! study's subset model with its predictions widened (`subset.rs`). A [`Wrapper`] says what it
//! changes (how much it widens the predictive distributions, what it adds to the description,
//! the memory it holds itself); every other [`Model`] method and every capability of the inner
//! model is forwarded here, once, so a method or capability added to `Model` reaches every
//! wrapper. `Predictor`, `Conditioning` and `Embedded` are the wrapper's own whenever the inner
//! model has them (it widens predictions, and wraps a conditioned model again); `Positional` and
//! `ContextSearch` are the inner model's as they are.
//!
//! Must not: hold an algorithm. A wrapper that changes how points are proposed is a model of its
//! own.

use std::sync::Arc;

use rand::Rng;

use super::{Conditioning, ContextSearch, Criterion, Embedded, Embeddings, FitError, Model, Positional, Prediction, Predictive, Predictor};
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

    fn describe(&self) -> serde_json::Value {
        self.describe_around(self.inner().describe())
    }

    fn memory_bytes(&self) -> usize {
        self.inner().memory_bytes() + self.own_bytes()
    }

    // The wrapper's own capability whenever the inner model has it: whether it widens is asked
    // only by the methods that widen (a subset's factor is found on first use, and `AUTO`
    // scoring its candidates by their own predictions must not pay for it).
    fn predictor(&self) -> Option<&dyn Predictor> {
        self.inner().predictor()?;
        Some(self)
    }

    fn conditioning(&self) -> Option<&dyn Conditioning> {
        self.inner().conditioning()?;
        Some(self)
    }

    fn embedded(&self) -> Option<&dyn Embedded> {
        self.inner().embedded()?;
        Some(self)
    }

    fn positional(&self) -> Option<&dyn Positional> {
        self.inner().positional()
    }

    fn context_search(&self) -> Option<&dyn ContextSearch> {
        self.inner().context_search()
    }
}

/// The inner model's predictions, widened where the wrapper widens (handed out by
/// [`Model::predictor`] only when the inner model predicts).
impl<W: Wrapper> Predictor for W {
    fn predict(&self, points: &[Assignment]) -> Option<Vec<Prediction>> {
        if self.widening().is_some()
            && let Some(widened) = self.predictive(points)
        {
            return Some(widened.iter().map(Predictive::summary).collect());
        }
        self.inner().predictor()?.predict(points)
    }

    fn predictive(&self, points: &[Assignment]) -> Option<Vec<Predictive<'_>>> {
        let inner = self.inner().predictor()?.predictive(points)?;
        match self.widening() {
            Some(factor) => Some(inner.into_iter().map(|p| p.widened(factor)).collect()),
            None => Some(inner),
        }
    }

    fn predicts_only(&self) -> Option<&'static str> {
        self.inner().predictor()?.predicts_only()
    }

    fn predict_metrics(&self, points: &[Assignment]) -> Option<Vec<(String, Vec<Prediction>)>> {
        self.inner().predictor()?.predict_metrics(points)
    }

    fn term_means(&self, points: &[Assignment]) -> Option<Vec<(String, Vec<f64>)>> {
        self.inner().predictor()?.term_means(points)
    }

    fn self_prediction(&self, criterion: Criterion) -> Option<Vec<f64>> {
        self.inner().predictor()?.self_prediction(criterion)
    }
}

/// The inner model conditioned, wrapped again (handed out by [`Model::conditioning`] only when
/// the inner model conditions).
impl<W: Wrapper> Conditioning for W {
    fn observe(&self, new: &[Observation]) -> Option<Arc<dyn Model>> {
        Some(self.rewrap(self.inner().conditioning()?.observe(new)?))
    }

    fn refactored(&self) -> Option<Arc<dyn Model>> {
        Some(self.rewrap(self.inner().conditioning()?.refactored()?))
    }
}

/// The inner model's embeddings, its predictions along them widened where the wrapper widens
/// (handed out by [`Model::embedded`] only when the inner model has embeddings).
impl<W: Wrapper> Embedded for W {
    fn embeddings(&self) -> Embeddings {
        match self.inner().embedded() {
            Some(inner) => inner.embeddings(),
            None => Embeddings { count: 0, dimension: 0, half_width: 0.0 },
        }
    }

    fn predictive_embedded(&self, embedding: usize, ys: &[Vec<f64>]) -> Option<Vec<Predictive<'_>>> {
        let inner = self.inner().embedded()?.predictive_embedded(embedding, ys)?;
        match self.widening() {
            Some(factor) => Some(inner.into_iter().map(|p| p.widened(factor)).collect()),
            None => Some(inner),
        }
    }
}
