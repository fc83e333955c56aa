//! What a fitted model is: a required core ([`Model`]: proposing, describing itself, its memory)
//! and capabilities that only some models have, each a trait of its own that the model hands out
//! through an accessor returning `None` when it lacks it — as Vizier's designers are or are not
//! predictors, and BoTorch's models do or do not condition on new observations:
//!
//! - [`Predictor`] — a predictive distribution of the objective (the GP designers, several
//!   metrics, REMBO);
//! - [`Conditioning`] — observations that arrived after the fit taken in cheaply, and the same
//!   model rebuilt from its own data (the GP designers, several metrics);
//! - [`Embedded`] — random embeddings it searches and predicts along (REMBO);
//! - [`Positional`] — proposals that depend only on their position in the study (random and
//!   quasi-random search);
//! - [`ContextSearch`] — its own search within a partial assignment (several metrics, safety).
//!
//! A model around another model (`wrapper.rs`) forwards every capability in one place.
//!
//! Must not: fit anything (that is the [`super::Designer`]'s), or mutate a model: every method
//! takes `&self`, and a model updated by new observations is a new model.

use std::sync::Arc;

use rand::Rng;

use super::{Criterion, FitError, Prediction, Predictive};
use crate::trial::{Assignment, Observation};

/// The cheap half of an algorithm: proposing new assignments.
pub trait Model: Send + Sync {
    /// Proposes up to `count` feasible assignments, distinct from `pending` (the trials in flight)
    /// where the space allows. Fewer than `count` means the designer has nothing more to
    /// propose: its plan has run out ([`Model::runs_out`]) or the space is used up; it never
    /// mutates the model.
    fn suggest(&self, pending: &[Assignment], count: usize, rng: &mut dyn Rng) -> Result<Vec<Assignment>, FitError>;

    /// Whether its proposals come from a finite plan that ends before the space does (a grid
    /// over real parameters): then fewer proposals than asked end the study. For every other
    /// model, fewer than asked in a space with points left is a failure, and the service fills
    /// the rest quasi-randomly.
    fn runs_out(&self) -> bool {
        false
    }

    /// What the model learned, as JSON for `GET …/model` (hyperparameters, structure).
    fn describe(&self) -> serde_json::Value {
        serde_json::json!({})
    }

    /// An estimate of the memory the model holds, in bytes, for the cache's budget.
    fn memory_bytes(&self) -> usize {
        1024
    }

    /// The model as a [`Predictor`], if it predicts.
    fn predictor(&self) -> Option<&dyn Predictor> {
        None
    }

    /// The model as [`Conditioning`], if it takes in new observations without a fit.
    fn conditioning(&self) -> Option<&dyn Conditioning> {
        None
    }

    /// The model as [`Embedded`], if it searches random embeddings.
    fn embedded(&self) -> Option<&dyn Embedded> {
        None
    }

    /// The model as [`Positional`], if its proposals can depend on their position alone.
    fn positional(&self) -> Option<&dyn Positional> {
        None
    }

    /// The model as [`ContextSearch`], if it searches within a context by its own acquisition.
    fn context_search(&self) -> Option<&dyn ContextSearch> {
        None
    }
}

/// A model with a predictive distribution of the objective.
pub trait Predictor {
    /// The predictive distribution of the objective at `points` (in the objective's own units
    /// and direction), summarised; `None` where the model does not predict at these points
    /// ([`Predictor::predicts_only`]). By default the summaries of [`Predictor::predictive`].
    fn predict(&self, points: &[Assignment]) -> Option<Vec<Prediction>> {
        Some(self.predictive(points)?.iter().map(Predictive::summary).collect())
    }

    /// The whole predictive distribution of the objective at `points`, for a model with one GP
    /// of the objective (through its warp): what calibration reads and a subset's model widens.
    fn predictive(&self, _points: &[Assignment]) -> Option<Vec<Predictive<'_>>> {
        None
    }

    /// Where [`Predictor::predict`] answers, for a model that predicts only at some points of
    /// the space (said to a user whose points lie elsewhere); `None`: wherever it predicts.
    fn predicts_only(&self) -> Option<&'static str> {
        None
    }

    /// For a model of several objectives: each one's posterior mean and deviation at `points`,
    /// by metric id, in the study's metric order; `None` for a model of one objective (its
    /// [`Predictor::predict`] is the whole answer).
    fn predict_metrics(&self, _points: &[Assignment]) -> Option<Vec<(String, Vec<Prediction>)>> {
        None
    }

    /// The posterior mean of each additive term of the model at `points` (by the term's name,
    /// in standardised units: what matters is how much each varies), for a model whose kernel
    /// is a sum of terms over groups of parameters (Kandasamy et al. 2015 eq. 5, Ma & Blaschko
    /// 2020's per-vertex posterior); `None` otherwise.
    fn term_means(&self, _points: &[Assignment]) -> Option<Vec<(String, Vec<f64>)>> {
        None
    }

    /// How well the model predicts its own training data: the log predictive density of each
    /// completed trial it was fitted on, in history order and the objective's units, as
    /// `criterion` predicts it (see [`crate::gp::Gp::loo_log_predictive`] and
    /// [`crate::gp::Gp::sequential_log_predictive`]), for a model with one GP over every
    /// completed trial; `None` otherwise. How `AUTO` compares candidate models of the same trials.
    fn self_prediction(&self, _criterion: Criterion) -> Option<Vec<f64>> {
        None
    }
}

/// A model that takes in observations that arrived after its fit without fitting again.
pub trait Conditioning {
    /// The model updated with observations that arrived after its fit, cheaply (a GP
    /// conditions on them by rank-one extensions of its factor, hyperparameters unchanged), or
    /// `None` if these it cannot — then the caller treats them as pending instead.
    fn observe(&self, new: &[Observation]) -> Option<Arc<dyn Model>>;

    /// The same model rebuilt from its own data at its own hyperparameters by a fresh fit at
    /// fixed θ, or `None` if that fails: what [`Conditioning::observe`] must equal (the
    /// conformance suite holds it to that).
    fn refactored(&self) -> Option<Arc<dyn Model>>;
}

/// A model that searches random embeddings and predicts along them (REMBO's low-dimensional
/// kernel, whose GPs live in them).
pub trait Embedded {
    /// The embeddings.
    fn embeddings(&self) -> Embeddings;

    /// The predictive distribution at points `ys` of embedding `embedding`'s box `[−h, h]^d` (a
    /// point outside is taken at the box's nearest point): what a model that predicts only at
    /// points of its embeddings answers along their own coordinates. `None` when `embedding` or
    /// a point's dimension does not fit them, or that embedding has no GP yet (its initial
    /// design).
    fn predictive_embedded(&self, embedding: usize, ys: &[Vec<f64>]) -> Option<Vec<Predictive<'_>>>;
}

/// A model whose proposals can depend only on their position in the study.
pub trait Positional {
    /// Proposals for trial `first` (counting from 0 in creation order) and the `count - 1`
    /// after it, depending on nothing the other trials hold, or `None` when in this space they
    /// must (a space of finitely many points, where repeating a trial is to be avoided). A
    /// service can answer these inside its bookkeeping at a cost that does not grow with the
    /// study. `Some` for `count == 0` says the model can.
    fn suggest_indexed(&self, first: u64, count: usize) -> Option<Vec<Assignment>>;
}

/// A model whose acquisition the generic search within a context (`context::suggest_in`) would
/// not reproduce (several metrics, safety).
pub trait ContextSearch {
    /// A suggestion within `context` (a checked partial assignment: see
    /// [`super::context::suggest_in`]) by the model's own acquisition, distinct from `pending`;
    /// `None` where it finds none (every candidate taken): the generic search decides.
    fn suggest_in_context(&self, context: &Assignment, pending: &[Assignment], rng: &mut dyn Rng) -> Option<Result<Assignment, FitError>>;
}

/// A model's random embeddings ([`Embedded::embeddings`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Embeddings {
    /// How many.
    pub count: usize,
    /// Their dimension d.
    pub dimension: usize,
    /// h of the box `Y = [−h, h]^d` each is searched in.
    pub half_width: f64,
}
