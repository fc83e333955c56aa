//! `REMBO`: Bayesian optimisation in random embeddings (Wang, Zoghi, Matheson, Hutter
//! & de Freitas 2016). For objectives that vary along few
//! directions of a high-dimensional box, BO runs in `Y = [−h, h]^d` and each point `y` is
//! evaluated at `p_X(A y)` (crate::embedding), the space's unit cube seen as `[−1, 1]^D`.
//!
//! - **Interleaved embeddings** (§3.1): `k` independent matrices (default 4), drawn from the
//!   study's seed; each suggestion goes to the embedding with the fewest trials (completed and
//!   pending), so the budget is split N/k as in Table 1. "The optimum is outside Y" happens with
//!   probability ≈ 0.29 for one embedding of d = 2 in Wang et al. 2016's box and ≈
//!   0.29^k for k; more in the smaller default box, which k embeddings cover.
//! - **Kernels** (§3.2): `LOW_DIM`, an isotropic squared exponential on y, one GP per embedding
//!   (Def. 4); `HIGH_DIM`, an isotropic squared exponential on the clipped point itself, one GP
//!   over every trial, with a categorical mismatch counted as a unit distance (the Hamming
//!   kernel of §3.2 with λ tied to ℓ; Wang et al. 2016's code uses `exp(−h/θ)`, and the paper's
//!   `exp(−λh²/2)` is not positive definite in general). `HIGH_DIM` is the default when any
//!   parameter is not DOUBLE, as integers, discrete values and categories are rounded after
//!   clipping (equal-width bins) and `y` cannot be recovered from them,
//!   and when there are fewer than 2d parameters to recover it from.
//! - **Which y a trial had**: a completed trial stores only its assignment; under `LOW_DIM` its
//!   `y` and embedding are recovered by least squares on its unclipped DOUBLE coordinates
//!   (exact for REMBO's own suggestions). Trials in no embedding's image (added by hand, or from
//!   another algorithm) are left out of the low-dimensional GPs and counted in `GET …/model`.
//! - **Hyperparameters**: θ = (log amplitude, log ℓ) and the noise by MAP as every GP here, on
//!   standardised outputs (A9); ℓ within [0.01, 1] in y's units — Wang et al. 2016's Algorithm 3 shrinks
//!   the upper bound of [0.01, 50] after 5 low-variance picks, whose variances are not stored
//!   with the trials, so a fixed bound stands in for it (measured, see the constant).
//! - **Acquisition**: log-EI (§4: "EI"), maximised over Y by Sobol candidates and L-BFGS
//!   (`optimize::subspace`) instead of DIRECT + CMA-ES — by default within a trust region
//!   around the embedding's best point (TuRBO-1's box, as `GP_BANDIT`'s), the whole of Y when
//!   the box has collapsed (a restart's global step) or holds no recoverable point. Not in Wang et al.
//!   2016: the local phase is what turns a basin found into a converged optimum, where the
//!   isotropic GP alone kept sampling Y's far corners (measured, below).
//! - **Design**: each embedding's first `initialDesignSize` points (max(2, d + 1), A7) are
//!   scrambled Sobol points of Y.
//!
//! | Name | Default | Purpose | Range |
//! | --- | --- | --- | --- |
//! | `d` | min(4, D) | the embedding's dimension | 1 – min(D, 50) |
//! | `k` | 4 | interleaved embeddings | 1 – 16 |
//! | `kernel` | `LOW_DIM` with ≥ 2d parameters, all DOUBLE; else `HIGH_DIM` | §3.2's kernels | — |
//! | `seed` | the study's | the embeddings' seed | any u64 |
//! | `initialDesignSize` | max(2, d + 1) | Sobol points per embedding | 1 – 1,000 |
//! | `numCandidates` | 256 | Sobol candidates per suggestion | 16 – 100,000 |
//! | `numRestarts` | 2 | random restarts of the hyperparameter fit | 0 – 50 |
//! | `boxHalfWidth` | 1 | h of the search box `Y = [−h, h]^d` (Wang et al. 2016: √d) | (0, 100] |
//! | `outputWarping` | `YEO_JOHNSON` | `NONE`, `YEO_JOHNSON` or `HALF_RANK`: the warp of the objective each GP is fitted to (`gp::output_warp`) | — |
//! | `trustRegion` | `true` (`LOW_DIM`) | `LOW_DIM` only: each embedding searches TuRBO-1's box around its best point (`gp::trust_region`, replayed from that embedding's trials), the whole of Y when the box collapses or holds no recoverable point | — |
//!
//! The last three depart from Wang et al. 2016 (measured: docs/journal/benchmarks.md, "`REMBO`'s
//! box, warp and trust region"): with `Y = [−√d, √d]^d` most of Y maps outside the box of the
//! parameters, so runs end on the clipped boundary; with h = 1 the optimum's pre-image still
//! lies in Y for most embeddings, and k of them cover the rest.
//!
//! [`Embedded`] is the algorithm on the embeddings' own coordinates, without a search space: the
//! designer maps assignments to it, and bo-bench drives it directly on D = 10⁹, where no search
//! space can list the parameters.

use std::sync::{Arc, OnceLock};

use rand::Rng;
use serde::Deserialize;

use super::calibration::{ByRegion, Evidence};
use super::config::{FromConfig, check_range, refuse_conditional};
use super::gp::schedule::fit_from_start;
use super::gp::{Effort, OutputWarping, Start, Training, Warp, add_fantasies, fit_gp, objective_values};
use super::{ConfigError, Designer, Embeddings, FitError, Fitted, Model, ModelState, Predictive, Predictor, Problem};
use crate::acquisition::Acquisition;
use crate::embedding::{Embedded, EmbeddedFit, Settings, isotropic, recover_from_rows, start};
use crate::gp::Gp;
use crate::optimize::sobol::sobol_point;
use crate::optimize::subspace::{self, Coordinate, SubspaceConfig};
use crate::space::features::Features;
use crate::space::{Domain, SearchSpace};
use crate::trial::{Assignment, Observation};

/// Which kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RemboKernel {
    /// Isotropic SE on y, a GP per embedding.
    LowDim,
    /// Isotropic SE on the clipped point, one GP.
    HighDim,
}

/// `algorithmConfig` of `REMBO` (the table above).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RemboParams {
    /// The embedding's dimension.
    pub d: Option<usize>,
    /// Interleaved embeddings.
    pub k: Option<usize>,
    /// The kernel.
    pub kernel: Option<RemboKernel>,
    /// The embeddings' seed.
    pub seed: Option<u64>,
    /// Sobol points per embedding before its GP.
    pub initial_design_size: Option<usize>,
    /// Sobol candidates per suggestion.
    pub num_candidates: Option<usize>,
    /// Random restarts of the hyperparameter fit.
    pub num_restarts: Option<usize>,
    /// The warp of the objective the GPs are fitted to.
    pub output_warping: Option<OutputWarping>,
    /// The half-width of the search box Y.
    pub box_half_width: Option<f64>,
    /// Whether each embedding searches a trust region around its best point.
    pub trust_region: Option<bool>,
}

/// The REMBO designer.
pub struct Rembo {
    seed: Option<u64>,
    kernel: RemboKernel,
    settings: Settings,
}

impl RemboParams {
    /// The embeddings' settings these give for a space of `n` parameters (the table above),
    /// checked.
    pub fn settings(&self, n: u64) -> Result<Settings, ConfigError> {
        let params = self;
        let max_d = n.min(50) as usize;
        let d = params.d.unwrap_or(4.min(max_d));
        check_range("d", d, 1, max_d)?;
        let k = params.k.unwrap_or(4);
        check_range("k", k, 1, 16)?;
        let initial_design_size = params.initial_design_size.unwrap_or((d + 1).max(2));
        check_range("initialDesignSize", initial_design_size, 1, 1000)?;
        let num_candidates = params.num_candidates.unwrap_or(256);
        check_range("numCandidates", num_candidates, 16, 100_000)?;
        let num_restarts = params.num_restarts.unwrap_or(2);
        check_range("numRestarts", num_restarts, 0, 50)?;
        let output_warping = params.output_warping.unwrap_or(OutputWarping::YeoJohnson);
        let half_width = params.box_half_width.unwrap_or(1.0);
        if !(half_width > 0.0 && half_width <= 100.0) {
            return Err(ConfigError::Invalid { field: "boxHalfWidth".into(), reason: format!("{half_width} is outside (0, 100]") });
        }
        let trust_region = params.trust_region.unwrap_or(true);
        Ok(Settings { d, k, initial_design_size, num_candidates, num_restarts, output_warping, half_width, trust_region })
    }
}

impl FromConfig for Rembo {
    type Params = RemboParams;

    /// Checks `params` against `space`.
    fn new(params: RemboParams, space: &SearchSpace) -> Result<Rembo, ConfigError> {
        let bad = |field: &str, reason: String| Err(ConfigError::Invalid { field: field.into(), reason });
        let all = space.params();
        refuse_conditional(space, "REMBO", "embeds")?;
        let n = all.len();
        let doubles = all.iter().filter(|p| matches!(p.domain, Domain::Double { .. })).count();
        let mut settings = params.settings(n as u64)?;
        let d = settings.d;
        let kernel = params.kernel.unwrap_or(if doubles == n && doubles >= 2 * d { RemboKernel::LowDim } else { RemboKernel::HighDim });
        if kernel == RemboKernel::LowDim && doubles < 2 * d {
            return bad(
                "kernel",
                format!(
                    "LOW_DIM recovers each trial's y from its DOUBLE parameters and needs at least 2d = {}; the space has {doubles}: use HIGH_DIM",
                    2 * d
                ),
            );
        }
        if kernel == RemboKernel::HighDim {
            if params.trust_region == Some(true) {
                return bad(
                    "trustRegion",
                    "the trust region is searched in one embedding's box, LOW_DIM's; HIGH_DIM searches every embedding's as a whole".into(),
                );
            }
            settings.trust_region = false;
        }
        Ok(Rembo { seed: params.seed, kernel, settings })
    }
}

/// The tolerance of a recovered y's image, in `[−1, 1]` units.
const RECOVERY_TOLERANCE: f64 = 1e-7;

/// The space's unit cube as `[−1, 1]^D`, and back, through each embedding — whose rows for the
/// space's D parameters are generated once per fit, not on every projection.
struct Ambient {
    space: SearchSpace,
    /// The DOUBLE parameters' coordinates: known exactly from an assignment.
    exact: Vec<usize>,
    /// `rows[r][i]`: row i of embedding r's A.
    rows: Vec<Vec<Vec<f64>>>,
}

impl Ambient {
    fn new(space: &SearchSpace, embedded: &Embedded) -> Ambient {
        let exact = space.params().iter().enumerate().filter(|(_, p)| matches!(p.domain, Domain::Double { .. })).map(|(i, _)| i).collect();
        let n = space.n_params() as u64;
        let rows = embedded.embeddings.iter().map(|e| (0..n).map(|i| e.row(i)).collect()).collect();
        Ambient { space: space.clone(), exact, rows }
    }

    fn x_of(&self, a: &Assignment) -> Vec<f64> {
        self.space.encode(a).iter().map(|u| 2.0 * u - 1.0).collect()
    }

    /// `A_i · y` (unclipped) for row `i` of embedding `r`.
    fn dot(&self, r: usize, i: usize, y: &[f64]) -> f64 {
        self.rows[r][i].iter().zip(y).map(|(a, y)| a * y).sum()
    }

    /// The assignment at `p_X(A y)` for embedding `r`.
    fn assignment(&self, r: usize, y: &[f64]) -> Assignment {
        let u: Vec<f64> = (0..self.rows[r].len()).map(|i| (self.dot(r, i, y).clamp(-1.0, 1.0) + 1.0) / 2.0).collect();
        self.space.decode(&u)
    }

    /// Whether the assignment at `y` will give `y` back: at least d DOUBLE coordinates of `A y`
    /// strictly inside the box (the least squares of [`recover_from_rows`]). Near Y's corners
    /// with d ≥ 3 most coordinates clip, and a trial there could not be told apart from others.
    fn recoverable(&self, r: usize, y: &[f64]) -> bool {
        self.exact.iter().filter(|&&i| self.dot(r, i, y).abs() < 1.0 - 1e-6).count() >= y.len()
    }

    /// The embedding and w of a trial of REMBO's.
    fn locate(&self, embedded: &Embedded, a: &Assignment) -> Option<(usize, Vec<f64>)> {
        let x = self.x_of(a);
        let values: Vec<f64> = self.exact.iter().map(|&i| x[i]).collect();
        (0..self.rows.len()).find_map(|r| {
            let rows: Vec<Vec<f64>> = self.exact.iter().map(|&i| self.rows[r][i].clone()).collect();
            recover_from_rows(&rows, &values, RECOVERY_TOLERANCE).map(|y| (r, embedded.w_of(&y)))
        })
    }
}

impl Designer for Rembo {
    fn work(&self, _space: &SearchSpace) -> super::Work {
        super::Work { candidates: self.settings.num_candidates, structure_evaluations: 0 }
    }

    fit_from_start!();
}

impl Rembo {
    /// The fit from `start`; restored, each embedding's GP at its stored θ, conditioned on `history`:
    /// no search.
    fn fit_from(&self, problem: &Problem, history: &[Observation], from: Start<'_>, rng: &mut dyn Rng) -> Result<Fitted, FitError> {
        let warm = from.state();
        let spec = &problem.spec;
        let embedded = Embedded::new(self.settings, self.seed.unwrap_or(problem.seed));
        let ambient = Ambient::new(&spec.space, &embedded);
        let (sign, values) = objective_values(spec, history);
        let model = match self.kernel {
            RemboKernel::LowDim => {
                let mut data = vec![Vec::new(); self.settings.k];
                let mut unmatched = 0;
                for (o, v) in history.iter().zip(&values) {
                    match (ambient.locate(&embedded, &o.assignment), v) {
                        (Some((r, w)), Some(v)) => data[r].push((w, *v)),
                        (None, _) => unmatched += 1,
                        _ => {}
                    }
                }
                let warm: Vec<Option<ModelState>> =
                    warm.and_then(|s| s.0.get("embeddings").cloned()).and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default();
                let fit = embedded.fit(&data, &warm, from.is_restore(), spec.observation_noise, rng)?;
                let state = ModelState(serde_json::json!({ "embeddings": fit.states() }));
                let calibrations = fit.runs.iter().map(|_| OnceLock::new()).collect();
                let model = LowDimModel { ambient, fit, unmatched, sign, calibrations };
                Fitted { model: Arc::new(model), state }
            }
            RemboKernel::HighDim => {
                let features = Features::new(&spec.space);
                let encode = |a: &Assignment| features.encode(a);
                let gp = match Training::new(
                    spec,
                    history,
                    &encode,
                    self.settings.initial_design_size * self.settings.k,
                    self.settings.output_warping,
                ) {
                    Some(Training { x, y, extra, warp, .. }) => {
                        let kernel =
                            isotropic((0..features.dim()).collect(), &features.categorical_dims(), 0.5, crate::kernel::LENGTH_SCALE_BOUNDS);
                        let warm = warm.and_then(|s| s.0.get("gp").cloned()).map(ModelState);
                        let (gp, state) = fit_gp(
                            kernel,
                            x,
                            &y,
                            &extra,
                            spec.observation_noise,
                            Effort::restarts(self.settings.num_restarts),
                            start(warm.as_ref(), from.is_restore()),
                            rng,
                        )?;
                        Some((gp, state, warp))
                    }
                    None => None,
                };
                let state = ModelState(serde_json::json!({ "gp": gp.as_ref().map(|(_, s, _)| s.clone()) }));
                let best = history.iter().zip(&values).filter_map(|(o, v)| v.map(|v| (o, v))).max_by(|a, b| a.1.total_cmp(&b.1));
                let model = HighDimModel {
                    anchor: best.and_then(|(o, _)| ambient.locate(&embedded, &o.assignment)),
                    embedded,
                    features,
                    ambient,
                    warp: gp.as_ref().map_or(Warp::Identity, |(_, _, w)| w.clone()),
                    gp: gp.map(|(gp, _, _)| gp),
                    n: history.len(),
                    sign,
                    calibration: OnceLock::new(),
                };
                Fitted { model: Arc::new(model), state }
            }
        };
        Ok(model)
    }
}

/// REMBO with the low-dimensional kernel: a GP per embedding.
struct LowDimModel {
    ambient: Ambient,
    fit: EmbeddedFit,
    /// Completed trials in no embedding's image.
    unmatched: usize,
    sign: f64,
    /// Each embedding's GP's calibration, found on its first prediction.
    calibrations: Vec<OnceLock<ByRegion>>,
}

impl LowDimModel {
    /// The predictive distributions of embedding `r`'s GP at `ws`, its own coordinates.
    fn predictive_in(&self, r: usize, ws: &[Vec<f64>]) -> Option<Vec<Predictive<'_>>> {
        let run = self.fit.runs.get(r)?;
        let gp = run.gp.as_ref()?;
        let calibration = self.calibrations[r].get_or_init(|| ByRegion::of_gp(gp, Evidence::LeaveOneOut));
        Some(Predictive::of_gp(gp, ws, &run.warp, self.sign, calibration))
    }
}

impl Model for LowDimModel {
    fn suggest(&self, pending: &[Assignment], count: usize, rng: &mut dyn Rng) -> Result<Vec<Assignment>, FitError> {
        let embedded = &self.fit.embedded;
        let mut in_flight = vec![Vec::new(); embedded.settings.k];
        for a in pending {
            if let Some((r, w)) = self.ambient.locate(embedded, a) {
                in_flight[r].push(w);
            }
        }
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            let recoverable = |r: usize, w: &[f64]| self.ambient.recoverable(r, &embedded.y_of(w));
            let (r, w) = self.fit.propose(&in_flight, &recoverable, rng);
            let a = self.ambient.assignment(r, &embedded.y_of(&w));
            if !w.iter().all(|v| v.is_finite()) {
                return Err(FitError::Numerical("REMBO's proposal is not finite".into()));
            }
            in_flight[r].push(w);
            out.push(a);
        }
        Ok(out)
    }

    fn describe(&self) -> serde_json::Value {
        let s = self.fit.embedded.settings;
        serde_json::json!({
            "model": "REMBO",
            "kernel": "LOW_DIM",
            "d": s.d,
            "k": s.k,
            "searchBox": [-s.half_width, s.half_width],
            "embeddings": self.fit.describe(),
            "unmatchedTrials": self.unmatched,
        })
    }

    fn memory_bytes(&self) -> usize {
        // Each embedding's GP, and what its run keeps per trial (its points in y, the trust
        // region's replay): counted at 1.5 KB a trial, as the GP designers' (tests/memory.rs).
        self.fit.runs.iter().map(|r| r.gp.as_ref().map_or(0, Gp::memory_bytes) + 1536 * r.n).sum::<usize>() + (32 << 10)
    }

    fn predictor(&self) -> Option<&dyn Predictor> {
        Some(self)
    }

    fn embedded(&self) -> Option<&dyn super::Embedded> {
        Some(self)
    }
}

impl Predictor for LowDimModel {
    fn predictive(&self, points: &[Assignment]) -> Option<Vec<Predictive<'_>>> {
        let embedded = &self.fit.embedded;
        points
            .iter()
            .map(|a| {
                let (r, w) = self.ambient.locate(embedded, a)?;
                self.predictive_in(r, &[w])?.pop()
            })
            .collect::<Option<Vec<_>>>()
    }

    fn predicts_only(&self) -> Option<&'static str> {
        Some("at points of its random embeddings (its own suggestions): each embedding's GP lives in that embedding")
    }
}

impl super::Embedded for LowDimModel {
    fn embeddings(&self) -> Embeddings {
        let s = self.fit.embedded.settings;
        Embeddings { count: s.k, dimension: s.d, half_width: s.half_width }
    }

    fn predictive_embedded(&self, embedding: usize, ys: &[Vec<f64>]) -> Option<Vec<Predictive<'_>>> {
        let embedded = &self.fit.embedded;
        if ys.iter().any(|y| y.len() != embedded.settings.d) {
            return None;
        }
        let ws: Vec<Vec<f64>> = ys.iter().map(|y| embedded.w_of(y)).collect();
        self.predictive_in(embedding, &ws)
    }
}

/// REMBO with the high-dimensional kernel: one GP on the clipped points; embedding `r` takes
/// every k-th suggestion.
struct HighDimModel {
    embedded: Embedded,
    features: Features,
    ambient: Ambient,
    gp: Option<Gp>,
    /// The warp the GP's targets went through.
    warp: Warp,
    sign: f64,
    /// The best trial's embedding and w, if it is REMBO's.
    anchor: Option<(usize, Vec<f64>)>,
    /// Completed trials.
    n: usize,
    /// The GP's calibration, found on its first prediction.
    calibration: OnceLock<ByRegion>,
}

impl HighDimModel {
    /// The assignment at `w` in embedding `r`, and its y.
    fn point(&self, r: usize, w: &[f64]) -> (Assignment, Vec<f64>) {
        let y = self.embedded.y_of(w);
        (self.ambient.assignment(r, &y), y)
    }

    /// `∂features/∂w` at y, non-zero for the unclipped DOUBLE coordinates:
    /// `∂u_i/∂w_p = √d A_ip`.
    fn jacobian(&self, r: usize, y: &[f64]) -> Vec<(usize, Vec<f64>)> {
        let h = self.embedded.settings.half_width;
        self.ambient
            .exact
            .iter()
            .filter(|&&i| self.ambient.dot(r, i, y).abs() < 1.0)
            .map(|&i| (i, self.ambient.rows[r][i].iter().map(|a| a * h).collect()))
            .collect()
    }
}

impl Model for HighDimModel {
    fn suggest(&self, pending: &[Assignment], count: usize, rng: &mut dyn Rng) -> Result<Vec<Assignment>, FitError> {
        let s = self.embedded.settings;
        let encode = |a: &Assignment| self.features.encode(a);
        let mut gp = self.gp.as_ref().map(|gp| gp.with_room(pending.len() + count));
        if let Some(gp) = &mut gp {
            add_fantasies(gp, &encode, pending);
        }
        let mut out = Vec::with_capacity(count);
        for b in 0..count {
            let index = self.n + pending.len() + b;
            let r = index % s.k;
            let e = &self.embedded.embeddings[r];
            let w = match &gp {
                None => sobol_point((index / s.k) as u64, s.d, e.seed()),
                Some(gp) => {
                    let best = gp.y().iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let acquisition = Acquisition::LogEi { best };
                    let score_batch = |ws: &[Vec<f64>]| {
                        let xs: Vec<Vec<f64>> = ws.iter().map(|w| encode(&self.point(r, w).0)).collect();
                        gp.predict(&xs).into_iter().map(|(m, v)| acquisition.value(m, v)).collect::<Vec<f64>>()
                    };
                    let score_grad = |ws: &[Vec<f64>]| {
                        let points: Vec<(Assignment, Vec<f64>)> = ws.iter().map(|w| self.point(r, w)).collect();
                        let xs: Vec<Vec<f64>> = points.iter().map(|(a, _)| encode(a)).collect();
                        gp.predict_with_grad_batch(&xs)
                            .iter()
                            .zip(&points)
                            .map(|(p, (_, y))| {
                                let (v, g) = acquisition.value_and_grad(p);
                                let mut grad = vec![0.0; s.d];
                                for (i, d_u) in self.jacobian(r, y) {
                                    grad.iter_mut().zip(&d_u).for_each(|(g_p, du)| *g_p += g[i] * du);
                                }
                                (v, grad)
                            })
                            .collect::<Vec<_>>()
                    };
                    let config = SubspaceConfig { n_candidates: s.num_candidates, ..SubspaceConfig::default() };
                    let anchors: Vec<Vec<f64>> = self.anchor.iter().filter(|(ar, _)| *ar == r).map(|(_, w)| w.clone()).collect();
                    let dims: Vec<usize> = (0..s.d).collect();
                    subspace::maximize(
                        &dims,
                        &vec![Coordinate::Unit; s.d],
                        &vec![0.5; s.d],
                        &score_batch,
                        &score_grad,
                        &anchors,
                        &config,
                        rng,
                    )
                    .map_or_else(|| sobol_point((index / s.k) as u64, s.d, e.seed()), |(w, _)| w)
                }
            };
            if !w.iter().all(|v| v.is_finite()) {
                return Err(FitError::Numerical("REMBO's proposal is not finite".into()));
            }
            let (a, _) = self.point(r, &w);
            if b + 1 < count
                && let Some(gp) = &mut gp
            {
                add_fantasies(gp, &encode, std::slice::from_ref(&a));
            }
            out.push(a);
        }
        Ok(out)
    }

    fn describe(&self) -> serde_json::Value {
        let s = self.embedded.settings;
        let h = self.gp.as_ref().map(|gp| gp.hyperparameters());
        serde_json::json!({
            "model": "REMBO",
            "kernel": "HIGH_DIM",
            "d": s.d,
            "k": s.k,
            "searchBox": [-s.half_width, s.half_width],
            "embeddings": self.embedded.embeddings.iter().map(|e| serde_json::json!({"seed": e.seed().to_string()})).collect::<Vec<_>>(),
            "trials": self.n,
            "lengthScale": h.as_ref().map(|h| h.kernel[1].exp()),
            "logNoiseVariance": h.as_ref().map(|h| h.log_noise),
        })
    }

    fn memory_bytes(&self) -> usize {
        let n = self.gp.as_ref().map_or(0, Gp::n);
        self.gp.as_ref().map_or(0, Gp::memory_bytes)
            + 8 * n * self.features.dim()
            + 1536 * n
            + 8 * self.ambient.rows.len() * self.ambient.space.n_params() * self.embedded.settings.d
            + (32 << 10)
    }

    fn predictor(&self) -> Option<&dyn Predictor> {
        Some(self)
    }
}

impl Predictor for HighDimModel {
    fn predictive(&self, points: &[Assignment]) -> Option<Vec<Predictive<'_>>> {
        let gp = self.gp.as_ref()?;
        let xs: Vec<Vec<f64>> = points.iter().map(|a| self.features.encode(a)).collect();
        Some(Predictive::of_gp(gp, &xs, &self.warp, self.sign, self.calibration.get_or_init(|| ByRegion::of_gp(gp, Evidence::LeaveOneOut))))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::designer::designer_for;
    use crate::space::{ParamSpec, Scale};
    use crate::study::{Goal, StudySpec};
    use crate::trial::Outcome;

    fn spec(d: usize, config: serde_json::Value) -> StudySpec {
        StudySpec::new(
            "f",
            Goal::Minimize,
            SearchSpace::new(
                (0..d)
                    .map(|i| ParamSpec {
                        id: format!("x{i}"),
                        domain: Domain::Double { min: -1.0, max: 1.0 },
                        scale: Scale::Linear,
                        default: None,
                        children: vec![],
                    })
                    .collect(),
            )
            .unwrap(),
            "REMBO",
        )
        .with_config(config)
    }

    #[test]
    fn small_spaces_default_to_the_high_dimensional_kernel() {
        // d = min(4, 3) = 3 needs 6 DOUBLE parameters to recover y; with 3 the default is HIGH_DIM.
        let small = spec(3, serde_json::Value::Null).space;
        assert_eq!(Rembo::new(RemboParams::default(), &small).unwrap().kernel, RemboKernel::HighDim);
        let large = spec(12, serde_json::Value::Null).space;
        assert_eq!(Rembo::new(RemboParams::default(), &large).unwrap().kernel, RemboKernel::LowDim);
        let forced = RemboParams { kernel: Some(RemboKernel::LowDim), ..RemboParams::default() };
        let err = Rembo::new(forced, &small).err().unwrap().to_string();
        assert!(err.contains("HIGH_DIM"), "{err}");
        // The trust region lives in one embedding's box: LOW_DIM's only.
        let local = RemboParams { trust_region: Some(true), ..RemboParams::default() };
        let err = Rembo::new(local, &small).err().unwrap().to_string();
        assert!(err.contains("trustRegion") && err.contains("LOW_DIM"), "{err}");
    }

    /// `n` of REMBO's own suggestions, each scored by the squared distance of its coordinates from
    /// `centre`, then the fit on all of them.
    fn own_loop(problem: &Problem, n: usize, centre: f64) -> Fitted {
        let designer = designer_for(&problem.spec).unwrap();
        let mut rng = StdRng::seed_from_u64(1);
        let mut history = Vec::new();
        for _ in 0..n {
            let model = designer.fit(problem, &history, None, &mut rng).unwrap().model;
            let a = model.suggest(&[], 1, &mut rng).unwrap().remove(0);
            let v: f64 = a.0.values().map(|v| if let crate::trial::ParamValue::Float(x) = v { (x - centre).powi(2) } else { 0.0 }).sum();
            history.push(Observation {
                objective_sd: None,
                assignment: a,
                outcome: Outcome::Measured(BTreeMap::from([("f".to_owned(), v)])),
            });
        }
        designer.fit(problem, &history, None, &mut rng).unwrap()
    }

    #[test]
    fn its_own_trials_are_recovered_and_spread_over_the_embeddings() {
        let problem = Problem { spec: spec(12, serde_json::json!({"d": 2, "k": 3})), seed: 4, priors: Vec::new() };
        let described = own_loop(&problem, 15, 0.0).model.describe();
        assert_eq!(described["unmatchedTrials"], 0, "{described}");
        let trials: Vec<u64> = described["embeddings"].as_array().unwrap().iter().map(|e| e["trials"].as_u64().unwrap()).collect();
        assert_eq!(trials, vec![5, 5, 5], "{described}");
    }

    /// Along an embedding's own coordinates the model answers as at the assignment each point
    /// projects to: the best point of each embedding, described in y, predicts as the trial
    /// there; a point of the wrong dimension, or an embedding that does not exist, is refused.
    #[test]
    fn it_predicts_along_its_embeddings_coordinates() {
        let problem = Problem { spec: spec(12, serde_json::json!({"d": 2, "k": 2, "initialDesignSize": 3})), seed: 4, priors: Vec::new() };
        let model = own_loop(&problem, 12, 0.1).model;
        assert_eq!(model.embedded().map(|e| e.embeddings()), Some(Embeddings { count: 2, dimension: 2, half_width: 1.0 }));
        let described = model.describe();
        // The assignment a point of Y projects to, as the designer maps it.
        let params: RemboParams = serde_json::from_value(serde_json::json!({"d": 2, "k": 2, "initialDesignSize": 3})).unwrap();
        let ambient = Ambient::new(&problem.spec.space, &Embedded::new(params.settings(12).unwrap(), problem.seed));
        for (r, e) in described["embeddings"].as_array().unwrap().iter().enumerate() {
            let y: Vec<f64> = serde_json::from_value(e["bestY"].clone()).expect("each embedding's best point, in y");
            let along = model.embedded().unwrap().predictive_embedded(r, std::slice::from_ref(&y)).expect("it predicts in its embedding")
                [0]
            .summary();
            let at = model.predictor().unwrap().predict(&[ambient.assignment(r, &y)]).expect("and at the trial")[0];
            assert!((along.median - at.median).abs() < 1e-9 && (along.upper - at.upper).abs() < 1e-9, "{along:?} against {at:?}");
        }
        assert!(model.embedded().unwrap().predictive_embedded(0, &[vec![0.0; 3]]).is_none(), "three coordinates in a 2-d embedding");
        assert!(model.embedded().unwrap().predictive_embedded(2, &[vec![0.0; 2]]).is_none(), "no third embedding");
    }
}
