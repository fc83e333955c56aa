//! Which parameters matter, two ways: PED-ANOVA over the trials themselves (model-free, works on
//! conditional spaces; Watanabe et al. 2023, Optuna's default evaluator) and Sobol indices of a
//! fitted model's posterior mean (first and total order, as Ax reports them), and for additive
//! models each term's share of the variation. Pure functions of the data and a seed.
//!
//! Must not: read a model's internals (the Sobol estimator sees the mean only through a
//! function of assignments) or know who calls it.

pub mod ped_anova;
pub mod sobol;
pub mod terms;

pub use ped_anova::{PedAnova, ped_anova};
pub use sobol::{SobolIndices, sobol_indices};
pub use terms::{TermShare, term_shares};
