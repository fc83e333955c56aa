//! Optimisers: bounded L-BFGS-B ([`lbfgsb`]) for hyperparameters and acquisitions, and the
//! maximisation of an acquisition over a mixed, conditional search space ([`mixed`]) or over a
//! few coordinates of a feature vector ([`subspace`]: one group of an additive model, an
//! embedding's box).

pub mod lbfgsb;
pub mod mixed;
pub mod subspace;
