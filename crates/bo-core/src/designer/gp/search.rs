//! The acquisition search over the whole (flattened) space that the GP designers without a
//! structure of their own share: how many candidates, how many L-BFGS iterations, and the search.
//!
//! Must not: choose the acquisition (the designer does) or fit a GP.

use std::collections::HashSet;

use rand::Rng;

use crate::acquisition::Acquisition;
use crate::gp::Gp;
use crate::optimize::NonFinite;
use crate::optimize::mixed::{MixedConfig, maximize};
use crate::space::features::Features;
use crate::trial::{Assignment, AssignmentKey};

/// Sobol candidates scored per suggestion by default, and L-BFGS iterations per start of the
/// acquisition search. Measured with `bo-bench suite` (docs/journal/benchmarks.md, issue 22's third
/// pass): 256 and 15 instead of 512 and 30 left the regret within seed spread on 25 problems
/// (30 seeds on the continuous and mixed ones, 20 on the conditional, 6 at D = 24–25) and made a
/// suggestion 20–45 % cheaper; at D = 20 every start had run all 30 iterations.
pub(crate) const DEFAULT_CANDIDATES: usize = 256;
pub(crate) const ACQUISITION_ITERATIONS: usize = 15;

/// `acquisition` under `gp` maximised over the whole (flattened) space by `optimize::mixed`:
/// `GP_BANDIT`'s search, and `ADD_GP_UCB`'s under `LOG_EI`.
pub(crate) fn maximize_acquisition(
    acquisition: Acquisition,
    gp: &Gp,
    features: &Features,
    taken: &HashSet<AssignmentKey>,
    anchors: &[Assignment],
    config: &MixedConfig,
    rng: &mut dyn Rng,
) -> Result<Option<(Assignment, f64)>, NonFinite> {
    let score_batch = |xs: &[Vec<f64>]| gp.predict(xs).into_iter().map(|(m, v)| acquisition.value(m, v)).collect::<Vec<f64>>();
    let score_grad = |xs: &[Vec<f64>]| gp.predict_with_grad_batch(xs).iter().map(|p| acquisition.value_and_grad(p)).collect::<Vec<_>>();
    maximize(features, &score_batch, &score_grad, taken, anchors, config, rng)
}
