//! The one GP model: a [`Posterior`] and a [`Proposer`], implementing [`Model`] once for every GP
//! designer. What differs between designers — the features, how a batch member is searched
//! (acquisition and candidates), what the model reports of itself — is the proposer's; what is
//! the same — fantasies and the batch loop, conditioning on new observations, predictions and the
//! memory estimate — is here.

use std::collections::HashSet;
use std::sync::Arc;

use rand::Rng;

use super::posterior::Posterior;
use crate::designer::{Conditioning, Criterion, FitError, Fitted, Model, ModelState, Predictive, Predictor};
use crate::gp::Gp;
use crate::kernel::Kernel;
use crate::trial::{Assignment, AssignmentKey, Observation};

/// One member of a batch, as the proposer sees it.
pub(crate) struct Member<'a> {
    /// The posterior with the pending trials and the members so far as fantasies.
    pub gp: &'a Gp,
    /// Keys not to propose again: the data, the pending trials and the members so far.
    pub taken: &'a HashSet<AssignmentKey>,
    /// This member's index in the batch.
    pub k: usize,
    /// The batch's size.
    pub count: usize,
    /// The number of pending trials.
    pub pending: usize,
    /// The best value the fantasies (pending trials and the members so far) are believed at, in
    /// `gp`'s standardised units; −∞ without fantasies. Counted as observed, it raises EI's and
    /// PI's incumbent (`Acquisition::with_incumbent_at_least`): a pending trial believed better
    /// than the best measured one is the value to improve on.
    pub believed: f64,
}

/// What a GP designer's model adds to its posterior.
pub(crate) trait Proposer: Send + Sync + 'static {
    /// What one batch carries from member to member (e.g. UCB-PE's region); fresh per batch.
    type Batch: Default;

    /// The model's features of an assignment.
    fn encode(&self, a: &Assignment) -> Vec<f64>;

    /// Batch member `member.k`, or `None` when nothing new is left to propose (a small discrete
    /// space used up).
    fn propose(
        &self,
        post: &Posterior,
        member: Member<'_>,
        batch: &mut Self::Batch,
        rng: &mut dyn Rng,
    ) -> Result<Option<Assignment>, FitError>;

    /// What the model learned, as JSON for `GET …/model`.
    fn describe(&self, post: &Posterior) -> serde_json::Value;

    /// The additive terms of the model's kernel, each named by what it covers (a group of
    /// parameters, a clique, a tree vertex), at the fitted θ; empty for a kernel that is not a
    /// sum of such terms.
    fn terms(&self) -> Vec<(String, &dyn Kernel)> {
        Vec::new()
    }

    /// Numbers held per observation besides its row of the factor (its features, and any
    /// per-point extras), for the memory estimate.
    fn width(&self) -> usize;
}

/// A GP designer's model.
pub(crate) struct GpModel<P> {
    post: Posterior,
    proposer: Arc<P>,
}

impl<P: Proposer> GpModel<P> {
    /// The fitted model of `post` and `proposer`, with the state to store.
    pub fn fitted(post: Posterior, proposer: P, state: ModelState) -> Fitted {
        Fitted { model: Arc::new(GpModel { post, proposer: Arc::new(proposer) }), state }
    }
}

impl<P: Proposer> Model for GpModel<P> {
    fn suggest(&self, pending: &[Assignment], count: usize, rng: &mut dyn Rng) -> Result<Vec<Assignment>, FitError> {
        let mut batch = P::Batch::default();
        let n_pending = pending.len();
        self.post.batch(&|a| self.proposer.encode(a), pending, count, |gp, taken, k| {
            // The fantasies follow the data in `gp`.
            let believed = gp.y()[self.post.gp.n().min(gp.n())..].iter().copied().fold(f64::NEG_INFINITY, f64::max);
            self.proposer.propose(&self.post, Member { gp, taken, k, count, pending: n_pending, believed }, &mut batch, rng)
        })
    }

    fn describe(&self) -> serde_json::Value {
        let mut described = self.proposer.describe(&self.post);
        if !self.post.warp.is_identity()
            && let Some(map) = described.as_object_mut()
        {
            map.insert("outputWarp".into(), self.post.warp.describe());
        }
        let calibration = self.post.calibration().describe();
        if !calibration.is_null()
            && let Some(map) = described.as_object_mut()
        {
            map.insert("predictionsCalibrated".into(), calibration);
        }
        described
    }

    fn memory_bytes(&self) -> usize {
        // The posterior (its factor and inputs dominate), the proposer's encoding, and what the
        // proposers keep per trial (anchors, a trust region's replay): under 1 KB a trial at six
        // parameters, counted at 1.5 KB (tests/memory.rs measures every designer).
        let n = self.post.gp.n();
        self.post.memory_bytes() + 8 * n * self.proposer.width() + 1536 * n + (32 << 10)
    }

    fn predictor(&self) -> Option<&dyn Predictor> {
        Some(self)
    }

    fn conditioning(&self) -> Option<&dyn Conditioning> {
        Some(self)
    }
}

impl<P: Proposer> Predictor for GpModel<P> {
    fn predictive(&self, points: &[Assignment]) -> Option<Vec<Predictive<'_>>> {
        Some(self.post.predictive(points, &|a| self.proposer.encode(a)))
    }

    fn term_means(&self, points: &[Assignment]) -> Option<Vec<(String, Vec<f64>)>> {
        let terms = self.proposer.terms();
        if terms.is_empty() {
            return None;
        }
        let xs: Vec<Vec<f64>> = points.iter().map(|a| self.proposer.encode(a)).collect();
        Some(
            terms
                .into_iter()
                .map(|(name, k)| (name, self.post.gp.predict_component(k, &xs).into_iter().map(|(m, _)| m).collect()))
                .collect(),
        )
    }

    fn self_prediction(&self, criterion: Criterion) -> Option<Vec<f64>> {
        let densities = match criterion {
            Criterion::Loo => self.post.gp.loo_log_predictive(),
            Criterion::Sequential => self.post.gp.sequential_log_predictive(),
        };
        // In the objective's own units whatever the warp: each density times the warp's slope
        // at its observation.
        if self.post.warp.is_identity() {
            return Some(densities);
        }
        let gp = &self.post.gp;
        Some(densities.into_iter().zip(gp.y()).map(|(d, y)| d + self.post.warp.log_slope(gp.unstandardize(*y, 0.0).0)).collect())
    }
}

impl<P: Proposer> Conditioning for GpModel<P> {
    fn observe(&self, new: &[Observation]) -> Option<Arc<dyn Model>> {
        let post = self.post.observed(new, &|a| self.proposer.encode(a))?;
        Some(Arc::new(GpModel { post, proposer: self.proposer.clone() }))
    }

    fn refactored(&self) -> Option<Arc<dyn Model>> {
        Some(Arc::new(GpModel { post: self.post.refactored()?, proposer: self.proposer.clone() }))
    }
}
