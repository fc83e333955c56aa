//! Optimisers: bounded L-BFGS-B ([`lbfgsb`]) for hyperparameters and acquisitions, and the
//! maximisation of an acquisition over a mixed, conditional search space ([`mixed`]) or over a
//! few coordinates of a feature vector ([`subspace`]: one group of an additive model, an
//! embedding's box); the scrambled Sobol points their candidates come from ([`sobol`]).

pub mod lbfgsb;
pub mod mixed;
pub mod sobol;
pub mod subspace;

/// Every candidate of an acquisition search scored NaN or infinite: the model's numbers went
/// wrong. Distinct from finding no candidate at all (a small discrete space used up), which is
/// not a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("every candidate's acquisition value was NaN or infinite")]
pub struct NonFinite;

impl From<NonFinite> for crate::designer::FitError {
    fn from(e: NonFinite) -> Self {
        crate::designer::FitError::Numerical(e.to_string())
    }
}
