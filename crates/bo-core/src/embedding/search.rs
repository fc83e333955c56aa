//! REMBO's search on the embeddings' own coordinates (Wang et al. 2016 §3):
//! a trial of embedding `r` is `w ∈ [0, 1]^d`, the point `y = h (2w −
//! 1)` of Y (`h` = 1 by default; Wang et al. 2016's box has √d); each embedding has its own GP (the
//! `LOW_DIM` kernel), its own scrambled Sobol design, and log-EI maximised over its box — or,
//! under `trust_region`, over TuRBO-1's box around its best point (`designer::gp::trust_region`,
//! replayed from that embedding's trials); a suggestion goes to the embedding with the fewest
//! trials. The designer (`designer::rembo`) maps assignments to and from these coordinates;
//! bo-bench drives this directly at D = 10⁹, where no search space can list the parameters.
//! Knows GPs, not search spaces or trials.

use rand::Rng;

use super::Embedding;
use crate::acquisition::Acquisition;
use crate::designer::gp::trust_region::{self, LocalPhase};
use crate::designer::gp::{Effort, OutputWarping, Start, Warp, fit_gp};
use crate::designer::{FitError, ModelState};
use crate::gp::Gp;
use crate::kernel::{GroupAdditive, Kernel, SquaredExpProfile};
use crate::optimize::mixed::{ScoreBatch, ScoreGrad};
use crate::optimize::sobol::sobol_point;
use crate::optimize::subspace::{self, Coordinate, SubspaceConfig};
use crate::study::ObservationNoise;

/// What [`Embedded`] needs besides the seed (a `REMBO` study's `algorithmConfig` gives them:
/// `RemboParams::settings`).
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// The embedding's dimension.
    pub d: usize,
    /// Interleaved embeddings.
    pub k: usize,
    /// Sobol points per embedding before its GP.
    pub initial_design_size: usize,
    /// Sobol candidates per suggestion.
    pub num_candidates: usize,
    /// Random restarts of the hyperparameter fit.
    pub num_restarts: usize,
    /// The warp of the objective each embedding's GP is fitted to.
    pub output_warping: OutputWarping,
    /// The half-width of the search box `Y = [−h, h]^d`.
    pub half_width: f64,
    /// Whether each embedding searches a trust region around its best point (TuRBO-1, as
    /// `GP_BANDIT`'s `trustRegion`), replayed from its own trials.
    pub trust_region: bool,
}

/// ℓ's bounds in y's units. Wang et al. 2016, §3.4 searches [0.01, 50] and shrinks the upper bound
/// whenever 5 consecutive picks had a tiny predictive variance (Algorithm 3: "err on the side of
/// too small a length scale"); the picks' variances are not stored with trials, so the bound is
/// fixed at 1 instead. Measured on Branin in D = 25 (d = 2, k = 4, 10 seeds): after 200
/// evaluations median regret 9.8e-3 against 2.7e-2 with 50, after 500 mean 3.6e-3 against
/// 2.0e-2 (docs/journal/benchmarks.md) — the clipped plateaus of Y otherwise pull ℓ long.
const LENGTH_SCALE_BOUNDS_Y: (f64, f64) = (0.01, 1.0);
/// ℓ's start in y's units (Wang et al. 2016's code, Branin demo).
const INITIAL_LENGTH_SCALE_Y: f64 = 0.1;
/// Sobol points of the design skipped at most, per point, when they are not allowed.
const MAX_DESIGN_SKIPS: usize = 8;

/// An isotropic squared exponential on `dims` (those in `categorical` compared by equality).
pub(crate) fn isotropic(dims: Vec<usize>, categorical: &[usize], length_scale: f64, bounds: (f64, f64)) -> Box<dyn Kernel> {
    let group = vec![dims.clone()];
    Box::new(GroupAdditive::<SquaredExpProfile>::new(dims, categorical, &group, length_scale, bounds).with_shared_length_scale())
}

/// REMBO on the embeddings' own coordinates: a trial of embedding `r` is `w ∈ [0, 1]^d`, the
/// point `y = h (2w − 1)` of Y, with a value to maximise.
#[derive(Clone, Debug)]
pub struct Embedded {
    pub(crate) settings: Settings,
    pub(crate) embeddings: Vec<Embedding>,
}

/// One embedding's fitted GP (none during its design).
pub(crate) struct Run {
    pub(crate) gp: Option<Gp>,
    /// The warp its GP's targets went through (the identity during the design).
    pub(crate) warp: Warp,
    /// Its trials (completed).
    pub(crate) n: usize,
    /// The best of them, for local search.
    best: Option<Vec<f64>>,
    /// The trust region's state after its trials, under `Settings::trust_region`.
    pub(crate) local: Option<LocalPhase>,
    state: Option<ModelState>,
}

/// The fitted GPs of every embedding.
pub struct EmbeddedFit {
    pub(crate) embedded: Embedded,
    pub(crate) runs: Vec<Run>,
}

impl Embedded {
    /// `settings.k` embeddings drawn from `seed`.
    pub fn new(settings: Settings, seed: u64) -> Embedded {
        Embedded { embeddings: (0..settings.k).map(|r| Embedding::nth(seed, r, settings.d)).collect(), settings }
    }

    /// The embeddings.
    pub fn embeddings(&self) -> &[Embedding] {
        &self.embeddings
    }

    /// y of `w`.
    pub fn y_of(&self, w: &[f64]) -> Vec<f64> {
        let h = self.settings.half_width;
        w.iter().map(|w| h * (2.0 * w - 1.0)).collect()
    }

    /// `w` of y, clamped to the box.
    pub fn w_of(&self, y: &[f64]) -> Vec<f64> {
        let h = self.settings.half_width;
        y.iter().map(|y| ((y / h + 1.0) / 2.0).clamp(0.0, 1.0)).collect()
    }

    /// Fits each embedding's GP on its trials `data[r]` (w, value to maximise), warm-started
    /// from `warm[r]`, the state of its last fit.
    pub fn fit(
        &self,
        data: &[Vec<(Vec<f64>, f64)>],
        warm: &[Option<ModelState>],
        restore: bool,
        noise: ObservationNoise,
        rng: &mut dyn Rng,
    ) -> Result<EmbeddedFit, FitError> {
        let d = self.settings.d;
        let scale = 2.0 * self.settings.half_width;
        let bounds = (LENGTH_SCALE_BOUNDS_Y.0 / scale, LENGTH_SCALE_BOUNDS_Y.1 / scale);
        let mut runs = Vec::with_capacity(self.settings.k);
        for r in 0..self.settings.k {
            let trials = data.get(r).map(Vec::as_slice).unwrap_or_default();
            let best = trials.iter().max_by(|a, b| a.1.total_cmp(&b.1)).map(|(w, _)| w.clone());
            if trials.len() < self.settings.initial_design_size.max(2) {
                let state = warm.get(r).cloned().flatten();
                runs.push(Run { gp: None, warp: Warp::Identity, n: trials.len(), best, local: None, state });
                continue;
            }
            let local = self.settings.trust_region.then(|| {
                let values: Vec<f64> = trials.iter().map(|(_, v)| *v).collect();
                trust_region::replay(&values, self.settings.initial_design_size, d, false)
            });
            let x: Vec<Vec<f64>> = trials.iter().map(|(w, _)| w.clone()).collect();
            let y: Vec<f64> = trials.iter().map(|(_, v)| *v).collect();
            let warp = Warp::fit(self.settings.output_warping, &y);
            let y: Vec<f64> = y.iter().map(|v| warp.apply(*v)).collect();
            let kernel = isotropic((0..d).collect(), &[], INITIAL_LENGTH_SCALE_Y / scale, bounds);
            let (gp, state) = fit_gp(
                kernel,
                x,
                &y,
                &[],
                noise,
                Effort::restarts(self.settings.num_restarts),
                start(warm.get(r).and_then(Option::as_ref), restore),
                rng,
            )?;
            runs.push(Run { gp: Some(gp), warp, n: trials.len(), best, local, state: Some(state) });
        }
        Ok(EmbeddedFit { embedded: self.clone(), runs })
    }
}

impl EmbeddedFit {
    /// The states to store, one per embedding.
    pub fn states(&self) -> Vec<Option<ModelState>> {
        self.runs.iter().map(|r| r.state.clone()).collect()
    }

    /// The embedding and `w` of the next trial, given the points in flight in each embedding
    /// (`pending[r]`), among the `w` that `allowed(r, w)` (all, for an objective that keeps
    /// `w`; those whose `y` can be recovered from the assignment, for a study).
    pub fn propose(
        &self,
        pending: &[Vec<Vec<f64>>],
        allowed: &(dyn Fn(usize, &[f64]) -> bool + Sync),
        rng: &mut dyn Rng,
    ) -> (usize, Vec<f64>) {
        let load = |r: usize| self.runs[r].n + pending.get(r).map_or(0, Vec::len);
        let r = (0..self.runs.len()).min_by_key(|&r| load(r)).expect("at least one embedding");
        let run = &self.runs[r];
        let d = self.embedded.settings.d;
        let seed = self.embedded.embeddings[r].seed();
        // The design: the next Sobol points of Y, skipping those not allowed.
        let design = |from: usize| {
            (0..MAX_DESIGN_SKIPS)
                .map(|skip| sobol_point((from * MAX_DESIGN_SKIPS + skip) as u64, d, seed))
                .find(|w| allowed(r, w))
                .unwrap_or_else(|| sobol_point((from * MAX_DESIGN_SKIPS) as u64, d, seed))
        };
        let Some(gp) = &run.gp else {
            return (r, design(load(r)));
        };
        let mut gp = gp.with_room(pending.get(r).map_or(0, Vec::len));
        let in_flight = pending.get(r).cloned().unwrap_or_default();
        let means: Vec<f64> = gp.predict(&in_flight).into_iter().map(|(m, _)| m).collect();
        for (w, m) in in_flight.into_iter().zip(means) {
            let _ = gp.condition_on(vec![w], vec![m], Some(1e-6));
        }
        let best = gp.y().iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let acquisition = Acquisition::LogEi { best };
        // A point not allowed scores −∞: the candidates drop it and L-BFGS steps back from it.
        let score_batch = |xs: &[Vec<f64>]| {
            gp.predict(xs)
                .into_iter()
                .zip(xs)
                .map(|((m, v), w)| if allowed(r, w) { acquisition.value(m, v) } else { f64::NEG_INFINITY })
                .collect::<Vec<f64>>()
        };
        let score_grad = |xs: &[Vec<f64>]| {
            gp.predict_with_grad_batch(xs)
                .iter()
                .zip(xs)
                .map(|(p, w)| if allowed(r, w) { acquisition.value_and_grad(p) } else { (f64::NEG_INFINITY, vec![0.0; d]) })
                .collect::<Vec<_>>()
        };
        let config = SubspaceConfig { n_candidates: self.embedded.settings.num_candidates, ..SubspaceConfig::default() };
        let anchors: Vec<Vec<f64>> = run.best.iter().cloned().collect();
        // The trust region's box around the best point, or the whole box; a region in which
        // nothing is allowed gives way to the whole box.
        let region = match (run.local.as_ref().and_then(|l| l.length), &run.best) {
            (Some(length), Some(best)) => Some(trust_region::region(best, length)),
            _ => None,
        };
        let search =
            |region: Option<&[(f64, f64)]>, rng: &mut dyn Rng| search_box(d, region, &score_batch, &score_grad, &anchors, &config, rng);
        let w =
            region.as_deref().and_then(|region| search(Some(region), rng)).or_else(|| search(None, rng)).unwrap_or_else(|| design(load(r)));
        (r, w)
    }

    /// The hyperparameters of each embedding's GP.
    pub(crate) fn describe(&self) -> Vec<serde_json::Value> {
        self.runs
            .iter()
            .zip(&self.embedded.embeddings)
            .map(|(run, e)| {
                let h = run.gp.as_ref().map(|gp| gp.hyperparameters());
                serde_json::json!({
                    "seed": e.seed().to_string(),
                    "trials": run.n,
                    "lengthScaleY": h.as_ref().map(|h| h.kernel[1].exp() * 2.0 * self.embedded.settings.half_width),
                    "logNoiseVariance": h.as_ref().map(|h| h.log_noise),
                    "trustRegion": run.local.as_ref().map(|l| serde_json::json!({"side": l.length, "restarts": l.restarts})),
                    "bestY": run.best.as_ref().map(|w| self.embedded.y_of(w)),
                })
            })
            .collect()
    }
}

/// The best `w` of `score` over `region` (the whole `[0, 1]^d` without one): the region is
/// searched as a unit cube of its own, mapped affinely onto it, so `optimize::subspace` needs
/// no notion of bounds.
fn search_box(
    d: usize,
    region: Option<&[(f64, f64)]>,
    score_batch: ScoreBatch<'_>,
    score_grad: ScoreGrad<'_>,
    anchors: &[Vec<f64>],
    config: &SubspaceConfig,
    rng: &mut dyn Rng,
) -> Option<Vec<f64>> {
    let unit = vec![(0.0, 1.0); d];
    let region = region.unwrap_or(&unit);
    let to_w = |u: &Vec<f64>| -> Vec<f64> { u.iter().zip(region).map(|(u, (lo, hi))| lo + u * (hi - lo)).collect() };
    let to_u = |w: &Vec<f64>| -> Vec<f64> { w.iter().zip(region).map(|(w, (lo, hi))| ((w - lo) / (hi - lo)).clamp(0.0, 1.0)).collect() };
    let batch = |us: &[Vec<f64>]| score_batch(&us.iter().map(to_w).collect::<Vec<_>>());
    let grad = |us: &[Vec<f64>]| {
        score_grad(&us.iter().map(to_w).collect::<Vec<_>>())
            .into_iter()
            .map(|(v, g)| (v, g.iter().zip(region).map(|(g, (lo, hi))| g * (hi - lo)).collect()))
            .collect::<Vec<_>>()
    };
    let anchors: Vec<Vec<f64>> = anchors.iter().map(to_u).collect();
    let dims: Vec<usize> = (0..d).collect();
    subspace::maximize(&dims, &vec![Coordinate::Unit; d], &vec![0.5; d], &batch, &grad, &anchors, config, rng).map(|(u, _)| to_w(&u))
}

/// A fit's start from an embedding's stored state: taken up as it is when restoring.
pub(crate) fn start(state: Option<&ModelState>, restore: bool) -> Start<'_> {
    match state {
        Some(s) if restore => Start::Restore(s),
        s => s.into(),
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    fn settings(trust_region: bool) -> Settings {
        Settings {
            d: 2,
            k: 1,
            initial_design_size: 3,
            num_candidates: 64,
            num_restarts: 0,
            output_warping: OutputWarping::None,
            half_width: 1.0,
            trust_region,
        }
    }

    /// Three design points, the best at (0.2, 0.3), then eight that do not improve on it:
    /// two halvings of TuRBO's box (side 0.8 → 0.2; four failures each for d = 2).
    fn data() -> Vec<Vec<(Vec<f64>, f64)>> {
        let mut trials = vec![(vec![0.2, 0.3], 1.0), (vec![0.9, 0.9], 0.0), (vec![0.6, 0.1], 0.2)];
        for i in 0..8 {
            let t = f64::from(i) / 8.0;
            trials.push((vec![0.5 + 0.4 * t, 0.9 - 0.3 * t], -0.5 - t));
        }
        vec![trials]
    }

    #[test]
    fn the_trust_region_keeps_the_proposal_near_the_best_point() {
        let embedded = Embedded::new(settings(true), 3);
        let fit = embedded.fit(&data(), &[None], false, ObservationNoise::Low, &mut StdRng::seed_from_u64(0)).unwrap();
        assert_eq!(fit.runs[0].local.as_ref().and_then(|l| l.length), Some(0.2));
        assert_eq!(fit.describe()[0]["trustRegion"]["side"], 0.2);
        for seed in 0..5 {
            let (r, w) = fit.propose(&[], &|_, _| true, &mut StdRng::seed_from_u64(seed));
            assert_eq!(r, 0);
            let inside = |v: f64, lo: f64, hi: f64| (lo - 1e-12..=hi + 1e-12).contains(&v);
            assert!(inside(w[0], 0.1, 0.3) && inside(w[1], 0.2, 0.4), "{w:?} is outside the box around (0.2, 0.3)");
        }
        // Where nothing in the box is allowed, the whole box is searched.
        let outside = |_: usize, w: &[f64]| w[0] > 0.5;
        let (_, w) = fit.propose(&[], &outside, &mut StdRng::seed_from_u64(0));
        assert!(w[0] > 0.5, "{w:?}");
    }

    #[test]
    fn without_the_trust_region_there_is_no_local_phase() {
        let fit =
            Embedded::new(settings(false), 3).fit(&data(), &[None], false, ObservationNoise::Low, &mut StdRng::seed_from_u64(0)).unwrap();
        assert!(fit.runs[0].local.is_none());
        assert!(fit.describe()[0]["trustRegion"].is_null());
    }
}
