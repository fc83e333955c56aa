//! Optimisers: bounded L-BFGS-B ([`lbfgsb`]) for hyperparameters and acquisitions, and the
//! maximisation of an acquisition over a mixed, conditional search space ([`mixed`]).

pub mod lbfgsb;
pub mod mixed;
