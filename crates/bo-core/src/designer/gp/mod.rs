//! What every GP designer shares (Vizier's `designers/gp/`): the training data a study's trials
//! make ([`training`]), the fit schedule with its explicit modes ([`schedule`]), the posterior
//! with fantasies, the batch loop and the prior-mean level ([`posterior`]), and the one GP model
//! type that implements `Model` for all of them ([`model`]) and its predictive distribution
//! ([`predictive`]), the flat model's kernel ([`kernel`]),
//! the acquisition search over the whole space ([`search`]) and the stack of prior studies
//! transfer learning stands on ([`priors`]). Each GP designer's own file keeps only its
//! algorithm: its settings, its structure search, its [`model::Proposer`].
//!
//! Must not: name a designer, parse `algorithmConfig`, or hold an acquisition rule.

pub(crate) mod kernel;
pub(crate) mod model;
pub mod output_warp;
pub(crate) mod posterior;
pub(crate) mod predictive;
pub mod priors;
pub(crate) mod schedule;
pub(crate) mod search;
pub(crate) mod training;
pub(crate) mod trust_region;

pub(crate) use kernel::{KernelKind, product_kernel};
pub(crate) use model::{GpModel, Member, Proposer};
pub use output_warp::OutputWarping;
pub(crate) use output_warp::Warp;
pub use posterior::PriorMean;
pub(crate) use posterior::{Posterior, add_fantasies};
pub use predictive::Predictive;
pub(crate) use schedule::{Effort, MAX_HYPERPARAMETER_SAMPLES, Start, fit_gp, noise_bounds, warm_start};
pub(crate) use training::{Training, objective_values};
