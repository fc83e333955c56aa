//! Learning-curve problems for the early-stopping rules: a trial trains epoch by epoch, reports
//! each epoch's accuracy and may be stopped; a run spends a budget of epochs. Scored by the true
//! final accuracy of the fully trained trial with the best reported final value, so far in the
//! epochs spent, against the best any configuration reaches — and by how many epochs the rule
//! saved. The peers' script (bench/peers/optuna_curves.py) defines the same problems and writes
//! the same JSON.
//!
//! The family is LCBench-like (Zimmer et al. 2021: a funnel MLP tuned over learning rate, batch
//! size, momentum, weight decay, layers and dropout): the final level is
//! `A = 0.1 + (top − 0.1) exp(−P)` with `P` a sum of squared misfits (the learning rate's
//! relative to an optimum that scales with the batch size, through momentum's effective rate;
//! weight decay; layers; dropout), and the curve is Domhan et al. (2015)'s Weibull model
//! `y(t) = 0.1 + (A − 0.1)(1 − e^{−(t/τ)^0.8})` with `τ` shorter for larger effective rates, minus
//! late over-fitting that grows as dropout falls — so fast starters are not always the best
//! finishers — plus a per-trial offset and per-epoch noise.
//!
//! A run reads its curves through [`CurveSource`]: the family above, or a pool of real
//! training curves (`pool.rs`), where each suggestion trains the blend of the pooled curves
//! nearest to it.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Context, Result};

use bo_core::designer::designer_for;
use bo_core::gp::Hyperparameters;
use bo_core::stopping::decay_curve::DecayCurveModel;
use bo_core::stopping::partial;
use bo_core::stopping::spec::{MedianOf, MedianStopping, Promotion, SuccessiveHalving};
use bo_core::stopping::successive_halving;
use bo_core::stopping::{Finished, StoppingDecision, convex, median_rule};
use bo_core::{
    Assignment, ConvexStopping, Domain, Goal, Measurement, Observation, Outcome, ParamSpec, ParamValue, Resumed, Scale, SearchSpace,
    StoppingSpec, StudySpec, Trial, TrialState,
};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;

/// Epochs of a full training.
pub const EPOCHS: usize = 50;

/// One problem's constants.
pub struct CurveProblem {
    /// Its command-line name.
    pub name: &'static str,
    /// log10 of the best learning rate at batch size 64.
    l0: f64,
    /// The best reachable accuracy before over-fitting.
    top: f64,
    /// Epochs to rise at the best rate.
    tau: f64,
    /// Accuracy lost to over-fitting by the last epoch without dropout.
    over: f64,
    /// Per-epoch noise (and per-trial offset) standard deviation.
    pub noise: f64,
    /// log10 of the best weight decay.
    w0: f64,
    /// The best number of layers.
    n0: f64,
    /// The best dropout.
    d0: f64,
}

/// The problems.
pub fn problems() -> Vec<CurveProblem> {
    vec![
        CurveProblem { name: "lc_a", l0: -2.5, top: 0.92, tau: 8.0, over: 0.04, noise: 0.01, w0: -3.5, n0: 3.0, d0: 0.3 },
        CurveProblem { name: "lc_b", l0: -1.8, top: 0.85, tau: 15.0, over: 0.08, noise: 0.02, w0: -4.0, n0: 2.0, d0: 0.5 },
        CurveProblem { name: "lc_c", l0: -3.0, top: 0.97, tau: 5.0, over: 0.02, noise: 0.005, w0: -2.5, n0: 4.0, d0: 0.1 },
    ]
}

/// The parameters: LCBench's, without the width.
pub fn space() -> SearchSpace {
    let p = |id: &str, domain: Domain, scale: Scale| ParamSpec { id: id.into(), domain, scale, default: None, children: vec![] };
    SearchSpace::new(vec![
        p("lr", Domain::Double { min: 1e-4, max: 1e-1 }, Scale::Log),
        p("batch_size", Domain::Integer { min: 16, max: 512 }, Scale::Log),
        p("momentum", Domain::Double { min: 0.1, max: 0.99 }, Scale::Linear),
        p("weight_decay", Domain::Double { min: 1e-5, max: 1e-1 }, Scale::Log),
        p("num_layers", Domain::Integer { min: 1, max: 5 }, Scale::Linear),
        p("max_dropout", Domain::Double { min: 0.0, max: 1.0 }, Scale::Linear),
    ])
    .expect("valid")
}

/// A configuration's numbers: lr, batch size, momentum, weight decay, layers, dropout.
pub type Config = [f64; 6];

fn numbers(a: &Assignment) -> Config {
    let get = |id: &str| match a.get(id) {
        Some(ParamValue::Float(x)) => *x,
        Some(ParamValue::Int(i)) => *i as f64,
        other => panic!("{id} is {other:?}"),
    };
    [get("lr"), get("batch_size"), get("momentum"), get("weight_decay"), get("num_layers"), get("max_dropout")]
}

impl CurveProblem {
    /// The noiseless curve's level `A`, time scale `τ` and dropout.
    fn shape(&self, c: &Config) -> (f64, f64, f64) {
        let [lr, batch, momentum, wd, layers, dropout] = *c;
        let l_star = self.l0 + 0.3 * (batch / 64.0).log2();
        let l_eff = lr.log10() - (1.0 - momentum).log10() - 1.0;
        let misfit = 1.2 * (l_eff - l_star).powi(2)
            + 0.125 * (wd.log10() - self.w0).powi(2)
            + 0.15 * (layers - self.n0).powi(2)
            + (dropout - self.d0).powi(2);
        let level = 0.1 + (self.top - 0.1) * (-misfit).exp();
        let tau = (self.tau * 10f64.powf(-0.5 * (l_eff - l_star))).clamp(0.5, 500.0);
        (level, tau, dropout)
    }

    /// The noiseless accuracy after `t` epochs.
    pub fn accuracy(&self, c: &Config, t: f64) -> f64 {
        let (level, tau, dropout) = self.shape(c);
        let rise = 1.0 - (-(t / tau).powf(0.8)).exp();
        let overfit = self.over * (1.0 - dropout) * (2.0 * (t / EPOCHS as f64 - 0.5)).max(0.0);
        0.1 + (level - 0.1) * rise - overfit
    }

    /// The noiseless accuracy of the configuration `a` after `t` epochs.
    pub fn accuracy_of(&self, a: &Assignment, t: f64) -> f64 {
        self.accuracy(&numbers(a), t)
    }

    /// The best final accuracy of any configuration: the best of a Sobol sample polished by
    /// coordinate search.
    pub fn optimum(&self) -> f64 {
        let space = space();
        let final_of = |c: &Config| self.accuracy(c, EPOCHS as f64);
        let mut best = (0..20_000u64)
            .map(|i| numbers(&space.decode(&bo_core::optimize::sobol::sobol_point(i, 6, 1))))
            .max_by(|a, b| final_of(a).total_cmp(&final_of(b)))
            .expect("a sample");
        let bounds = [(1e-4f64, 1e-1f64), (16.0, 512.0), (0.1, 0.99), (1e-5, 1e-1), (1.0, 5.0), (0.0, 1.0)];
        let mut step = 0.25;
        while step > 1e-6 {
            let mut moved = false;
            for i in 0..6 {
                for dir in [-1.0, 1.0] {
                    let mut c = best;
                    let (lo, hi) = bounds[i];
                    c[i] = if matches!(i, 0 | 3) {
                        10f64.powf((c[i].log10() + dir * step * (hi / lo).log10()).clamp(lo.log10(), hi.log10()))
                    } else {
                        (c[i] + dir * step * (hi - lo)).clamp(lo, hi)
                    };
                    if matches!(i, 1 | 4) {
                        c[i] = c[i].round();
                    }
                    if final_of(&c) > final_of(&best) {
                        best = c;
                        moved = true;
                    }
                }
            }
            if !moved {
                step /= 2.0;
            }
        }
        final_of(&best)
    }
}

/// Where a run's curves come from: what it searches, how long a full training is, and each
/// trial's values step by step.
pub trait CurveSource {
    /// What a run keeps of a trial to train it on (and to resume it with).
    type Training: Clone;
    /// Its name in tables and files.
    fn name(&self) -> &str;
    /// The parameters searched.
    fn space(&self) -> SearchSpace;
    /// Steps of a full training.
    fn steps(&self) -> usize;
    /// A new trial of `a` (drawing its per-trial noise, if any, from `noise`).
    fn begin(&self, a: &Assignment, noise: &mut StdRng) -> Self::Training;
    /// The value reported after step `step` (from 1).
    fn value(&self, training: &Self::Training, step: usize, noise: &mut StdRng) -> f64;
    /// The true final value a fully trained trial is scored by.
    fn truth(&self, training: &Self::Training) -> f64;
    /// The best final value any configuration reaches.
    fn optimum(&self) -> f64;
}

/// The synthetic family: a trial is its configuration's numbers and its per-trial offset.
impl CurveSource for CurveProblem {
    type Training = (Config, f64);

    fn name(&self) -> &str {
        self.name
    }

    fn space(&self) -> SearchSpace {
        space()
    }

    fn steps(&self) -> usize {
        EPOCHS
    }

    fn begin(&self, a: &Assignment, noise: &mut StdRng) -> (Config, f64) {
        (numbers(a), gauss(noise) * self.noise)
    }

    fn value(&self, (c, offset): &(Config, f64), step: usize, noise: &mut StdRng) -> f64 {
        self.accuracy(c, step as f64) + offset + gauss(noise) * self.noise
    }

    fn truth(&self, (c, _): &(Config, f64)) -> f64 {
        self.accuracy(c, EPOCHS as f64)
    }

    fn optimum(&self) -> f64 {
        CurveProblem::optimum(self)
    }
}

/// The early-stopping rule a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Every trial trains fully.
    None,
    /// `medianAutomatedStoppingSpec`.
    Median,
    /// `median-value`: the same with `medianOf: VALUE_AT_POSITION` (Optuna's `MedianPruner`).
    MedianValue,
    /// `decayCurveStoppingSpec`.
    DecayCurve,
    /// `convexAutomatedStoppingSpec` (maximum 50 epochs, the other settings default).
    Convex,
    /// `successiveHalvingStoppingSpec`: rungs 1, 3, 9, 27 below 50 epochs, a third goes on, in
    /// `brackets` of Hyperband (`asha`: 1; `hyperband`: one starting at each rung, 4;
    /// `hyperband2`, `hyperband3`: the first 2 or 3), promoting by `promotion` (the name's
    /// suffix `-topk` for `TOP_K`); `:min=K` and `:eta=E` after the name set `minStepCount`
    /// and `reductionFactor` (1 and 3 otherwise).
    Halving {
        /// Hyperband's brackets.
        brackets: u32,
        /// Which trials at a rung go on.
        promotion: Promotion,
        /// `minStepCount`.
        min: u32,
        /// `reductionFactor`.
        eta: u32,
    },
    /// `asha-resume`: the service's `successiveHalvingStoppingSpec.resume`, ASHA as Li et al.
    /// (2020, Algorithm 2) run it, with checkpoints. A trial pauses at each rung (1, 3, 9, 27
    /// below 50; η = 3) and the designer learns its value there, as a stopped trial's. A free
    /// worker resumes the best paused trial among the best `⌊n/η⌋` of the `n` trials at the
    /// highest rung that has one, as a new trial carrying its curve, training it to the next
    /// rung. Only when none is promotable does it start a new trial.
    Resume,
}

/// What the designer learns from a trial a rule stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partials {
    /// As the service does (`bo_core::stopping::partial`): `Predicted`, except under
    /// successive halving, where `Last`.
    Model,
    /// Its final value as the decay-curve model predicts it from its curve, observed with the
    /// prediction's variance as noise of its own, whatever the rule (the service before
    /// successive halving learnt the rung values).
    Predicted,
    /// The predicted final value taken as if measured (the prediction's spread dropped): the
    /// service before partial trials carried their uncertainty.
    Mean,
    /// As `Predicted` with half the prediction's standard deviation: a candidate, measured
    /// against `Predicted` and `Mean`.
    HalfSpread,
    /// Its last value, as if it were the configuration's result (the service before partial
    /// results were modelled).
    Last,
    /// Its predicted final value less one standard deviation of the prediction: a candidate
    /// rule, measured against `Predicted`.
    Cautious,
}

impl Rule {
    /// By name.
    pub fn parse(name: &str) -> Option<Rule> {
        Some(match name {
            "none" => Rule::None,
            "median" => Rule::Median,
            "median-value" => Rule::MedianValue,
            "decay" => Rule::DecayCurve,
            "convex" => Rule::Convex,
            "asha-resume" => Rule::Resume,
            _ => {
                let mut parts = name.split(':');
                let name = parts.next()?;
                let (mut min, mut eta) = (1, 3);
                for part in parts {
                    match part.split_once('=')? {
                        ("min", k) => min = k.parse().ok().filter(|k| *k >= 1)?,
                        ("eta", e) => eta = e.parse().ok().filter(|e| *e >= 2)?,
                        _ => return None,
                    }
                }
                let (base, promotion) = match name.strip_suffix("-topk") {
                    Some(base) => (base, Promotion::TopK),
                    None => (name, Promotion::Quantile),
                };
                let brackets = match base {
                    "asha" => 1,
                    "hyperband" => 4,
                    "hyperband2" => 2,
                    "hyperband3" => 3,
                    _ => return None,
                };
                Rule::Halving { brackets, promotion, min, eta }
            }
        })
    }

    /// The name.
    pub fn name(self) -> String {
        match self {
            Rule::None => "none".into(),
            Rule::Median => "median".into(),
            Rule::MedianValue => "median-value".into(),
            Rule::DecayCurve => "decay".into(),
            Rule::Convex => "convex".into(),
            Rule::Resume => "asha-resume".into(),
            Rule::Halving { brackets, promotion, min, eta } => {
                let base = match brackets {
                    1 => "asha".to_owned(),
                    4 => "hyperband".to_owned(),
                    b => format!("hyperband{b}"),
                };
                let mut name = match promotion {
                    Promotion::Quantile => base,
                    Promotion::TopK => format!("{base}-topk"),
                };
                if min != 1 {
                    name += &format!(":min={min}");
                }
                if eta != 3 {
                    name += &format!(":eta={eta}");
                }
                name
            }
        }
    }

    /// The study's rule for curves of `steps` steps.
    fn spec(self, steps: usize) -> Option<StoppingSpec> {
        match self {
            Rule::None => None,
            Rule::Median => Some(StoppingSpec::Median(Default::default())),
            Rule::MedianValue => Some(StoppingSpec::Median(MedianStopping { median_of: MedianOf::ValueAtPosition, ..Default::default() })),
            Rule::DecayCurve => Some(StoppingSpec::DecayCurve { use_elapsed_duration: false }),
            Rule::Convex => Some(StoppingSpec::Convex(ConvexStopping { max_step_count: Some(steps as f64), ..ConvexStopping::default() })),
            Rule::Halving { brackets, promotion, min, eta } => Some(StoppingSpec::SuccessiveHalving(SuccessiveHalving {
                min_step_count: min.into(),
                max_step_count: steps as f64,
                reduction_factor: eta.into(),
                use_elapsed_duration: false,
                brackets,
                promotion,
                resume: false,
            })),
            // The service's rule with `resume`: its paused trials are learnt at their rung values.
            Rule::Resume => Some(StoppingSpec::SuccessiveHalving(SuccessiveHalving {
                min_step_count: 1.0,
                max_step_count: steps as f64,
                reduction_factor: 3.0,
                use_elapsed_duration: false,
                brackets: 1,
                promotion: Promotion::TopK,
                resume: true,
            })),
        }
    }
}

/// One seed's run, as the peers' script writes it.
#[derive(Serialize)]
pub struct CurveTrace {
    /// The seed.
    pub seed: u64,
    /// After each trial ends (or pauses, under `asha-resume`): epochs spent so far and the true
    /// final accuracy of the incumbent (the fully trained trial with the best reported final
    /// value; `None` before one).
    pub spent: Vec<usize>,
    /// The incumbent's true final accuracy after each trial.
    pub incumbent: Vec<Option<f64>>,
    /// Trials that trained fully.
    pub full: usize,
    /// Seconds spent deciding on stops (the rule's own cost).
    pub rule_seconds: f64,
    /// Seconds spent suggesting.
    pub suggest_seconds: f64,
}

/// How a run is set up besides its problem and seed.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The designer's name.
    pub algorithm: String,
    /// Its `algorithmConfig`.
    pub config: serde_json::Value,
    /// The stopping rule.
    pub rule: Rule,
    /// What the designer learns from a stopped trial.
    pub partials: Partials,
    /// Epochs to spend.
    pub budget: usize,
    /// Trials trained at once (asynchronous workers: each asks for a new trial as soon as its
    /// last one ends, with the others' pending).
    pub workers: usize,
}

/// Runs `setup` on `problem` until its budget of epochs is spent. Time advances an epoch at a
/// time: each worker's trial trains one epoch and the rule decides on it, in worker order; a
/// worker whose trial ended gets a new one, the designer seeing the others as pending. With
/// one worker this is a sequential study.
pub fn run<C: CurveSource>(problem: &C, setup: &Setup, seed: u64) -> Result<CurveTrace> {
    let Setup { algorithm, config, rule, partials, budget, workers } = setup.clone();
    let steps = problem.steps();
    let mut spec = StudySpec::new("accuracy", Goal::Maximize, problem.space(), &algorithm).with_config(config);
    spec.stopping = rule.spec(steps);
    if let Some(StoppingSpec::SuccessiveHalving(h)) = &spec.stopping {
        h.check(&rule.name()).map_err(|e| anyhow::anyhow!("{e} (curves of {steps} steps)"))?;
    }
    let designer = designer_for(&spec).with_context(|| format!("algorithm {algorithm}"))?;
    let study = bo_core::Problem { spec: spec.clone(), seed, priors: Vec::new() };
    let mut state = State {
        spec,
        rule,
        partials,
        rng: StdRng::seed_from_u64(seed),
        history: Vec::new(),
        trials: Vec::new(),
        curve_model: None,
        curve_warm: None,
        finished: Finished::default(),
        trace: CurveTrace { seed, spent: vec![], incumbent: vec![], full: 0, rule_seconds: 0.0, suggest_seconds: 0.0 },
        spent: 0,
        best_reported: None,
    };
    let mut noise = StdRng::seed_from_u64(seed ^ 0x5eed_c0de);
    let objective = state.spec.objective().clone();
    let mut warm = None;
    // Each worker's trial being trained, by its place in `state.trials`.
    let mut running: Vec<Option<usize>> = vec![None; workers.max(1)];
    // Each trial's training, by its place in `state.trials` (a resumed trial shares it).
    let mut trainings: Vec<C::Training> = Vec::new();
    // Under `asha-resume`, the study's successive-halving spec, whose rule pauses trials.
    let resume = match &state.spec.stopping {
        Some(StoppingSpec::SuccessiveHalving(h)) if h.resume => Some(h.clone()),
        _ => None,
    };
    loop {
        for w in 0..running.len() {
            if running[w].is_some() || state.spent >= budget {
                continue;
            }
            // As the service's suggest does: a paused trial ASHA promotes comes back as a new
            // trial that resumes it, with its measurements (and the same noise offset).
            if let Some(rule) = &resume
                && let Some(from) = successive_halving::promotable_among(&objective, rule, &state.trials)
            {
                let old = &state.trials[from as usize - 1];
                let at = old.measurements.last().map_or(0.0, |m| m.step_count as f64);
                let trial = Trial {
                    measurements: old.measurements.clone(),
                    resumed: Some(Resumed { from, at }),
                    ..Trial::new(state.trials.len() as i64 + 1, old.assignment.clone())
                };
                let training = trainings[from as usize - 1].clone();
                state.trials.push(trial);
                trainings.push(training);
                running[w] = Some(state.trials.len() - 1);
                state.history = partial::observations(&state.spec, &state.trials, &BTreeMap::new());
                continue;
            }
            let pending: Vec<Assignment> = running.iter().flatten().map(|&at| state.trials[at].assignment.clone()).collect();
            let start = Instant::now();
            let fitted = designer.fit(&study, &state.history, warm.as_ref(), &mut state.rng)?;
            let a = fitted.model.suggest(&pending, 1, &mut state.rng)?.into_iter().next().context("the designer proposed nothing")?;
            state.trace.suggest_seconds += start.elapsed().as_secs_f64();
            warm = Some(fitted.state);
            trainings.push(problem.begin(&a, &mut noise));
            state.trials.push(Trial::new(state.trials.len() as i64 + 1, a));
            running[w] = Some(state.trials.len() - 1);
        }
        if running.iter().all(Option::is_none) {
            break;
        }
        for slot in running.iter_mut() {
            let Some(at) = *slot else { continue };
            if state.spent >= budget {
                break;
            }
            state.spent += 1;
            let t = state.trials[at].measurements.len() + 1;
            let y = problem.value(&trainings[at], t, &mut noise);
            state.trials[at].measurements.push(Measurement {
                step_count: t as i64,
                elapsed_secs: t as f64,
                metrics: [("accuracy".to_owned(), y)].into(),
            });
            if t == steps {
                state.complete(at, None, steps, problem.truth(&trainings[at]))?;
                *slot = None;
                continue;
            }
            let start = Instant::now();
            let trial = &state.trials[at];
            let decision = match rule {
                Rule::None => StoppingDecision::go_on(""),
                Rule::Median | Rule::MedianValue => median_rule(
                    &objective,
                    trial,
                    &state.trials,
                    false,
                    bo_core::stopping::MIN_COMPLETED,
                    if rule == Rule::Median { MedianOf::RunningAverage } else { MedianOf::ValueAtPosition },
                ),
                Rule::DecayCurve => match &state.curve_model {
                    Some(m) => m.decide(&objective, trial),
                    None => StoppingDecision::go_on(""),
                },
                Rule::Convex => match &state.spec.stopping {
                    Some(StoppingSpec::Convex(c)) => convex::decide(c, &state.spec, &state.finished, trial),
                    _ => unreachable!("the convex rule's spec"),
                },
                Rule::Halving { .. } | Rule::Resume => bo_core::stopping::decide(&state.spec, trial, &state.trials, &mut state.rng),
            };
            state.trace.rule_seconds += start.elapsed().as_secs_f64();
            if decision.should_stop {
                state.complete(at, Some(decision), steps, problem.truth(&trainings[at]))?;
                *slot = None;
            }
        }
        if state.spent >= budget {
            // The budget is spent: the trials still training end where they are (one given out
            // in the last round that never trained is left out).
            for at in running.iter_mut().filter_map(Option::take) {
                if !state.trials[at].measurements.is_empty() {
                    state.complete(at, None, steps, problem.truth(&trainings[at]))?;
                }
            }
            break;
        }
    }
    Ok(state.trace)
}

/// A run's state between epochs.
struct State {
    spec: StudySpec,
    rule: Rule,
    partials: Partials,
    rng: StdRng,
    /// What the designer learns from.
    history: Vec<Observation>,
    /// Every trial, running ones included (the rules see them, as the service's do).
    trials: Vec<Trial>,
    curve_model: Option<DecayCurveModel>,
    curve_warm: Option<Hyperparameters>,
    finished: Finished,
    trace: CurveTrace,
    spent: usize,
    /// The best reported final value of a fully trained trial, with its true final accuracy.
    best_reported: Option<(f64, f64)>,
}

impl State {
    /// Completes trial `at`, stopped by `stopped` or ended (trained fully — `steps` of them — or
    /// cut by the budget), and updates what the designer and the rules learn from; `truth` is
    /// the true final value it would be scored by.
    fn complete(&mut self, at: usize, stopped: Option<StoppingDecision>, steps: usize, truth: f64) -> Result<()> {
        let spec = &self.spec;
        let trial = &mut self.trials[at];
        let trained_fully = trial.measurements.len() == steps;
        if stopped.is_some() {
            trial.stop_time_ms = Some(0);
        }
        if let Some(m) = stopped.and_then(|d| d.last_measurement) {
            trial.measurements.push(m);
        }
        let last = trial.measurements.last().context("a trained trial has a measurement")?.clone();
        trial.final_measurement = Some(last.clone());
        trial.state = TrialState::Succeeded;
        let reported = last.metrics["accuracy"];
        if trained_fully {
            self.trace.full += 1;
            if self.best_reported.is_none_or(|(r, _)| reported > r) {
                self.best_reported = Some((reported, truth));
            }
        }
        self.history.push(Observation {
            objective_sd: None,
            assignment: trial.assignment.clone(),
            outcome: Outcome::Measured(last.metrics),
        });
        // The rules' view of the finished trials, as a service reads it at each data version, and
        // the partial trials' predicted final values, from the same model.
        let predicted = match self.partials {
            Partials::Last => false,
            Partials::Model => partial::predicts(spec),
            Partials::Predicted | Partials::Mean | Partials::HalfSpread | Partials::Cautious => true,
        };
        let model_partials = predicted && self.trials.iter().any(Trial::is_partial);
        if matches!(self.rule, Rule::DecayCurve | Rule::Convex) || model_partials {
            let start = Instant::now();
            self.finished = Finished::from_trials(spec, &self.trials, 0, false);
            if self.rule == Rule::DecayCurve || model_partials {
                self.curve_model = DecayCurveModel::fit(spec, &self.finished, self.curve_warm.as_ref(), &mut self.rng)?;
                if let Some(m) = &self.curve_model {
                    self.curve_warm = Some(m.hyperparameters());
                }
            }
            self.trace.rule_seconds += start.elapsed().as_secs_f64();
        }
        if model_partials && let Some(m) = &self.curve_model {
            let mut estimates = partial::estimates(m, &self.trials, &partial::curves_of(spec, &self.trials));
            if self.partials == Partials::Cautious {
                // The objective is maximised here.
                estimates.values_mut().for_each(|e| e.mean -= e.sd);
            }
            self.history = partial::observations(spec, &self.trials, &estimates);
            match self.partials {
                Partials::Mean => self.history.iter_mut().for_each(|o| o.objective_sd = None),
                Partials::HalfSpread => self.history.iter_mut().for_each(|o| o.objective_sd = o.objective_sd.map(|s| 0.5 * s)),
                _ => {}
            }
        }
        self.trace.spent.push(self.spent);
        self.trace.incumbent.push(self.best_reported.map(|(_, truth)| truth));
        Ok(())
    }
}

/// A standard normal draw (Box–Muller).
pub(crate) fn gauss(rng: &mut StdRng) -> f64 {
    let (u, v): (f64, f64) = (rng.random::<f64>().max(1e-300), rng.random());
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// The incumbent's true final accuracy once `epochs` were spent (`None` before a full trial).
pub fn at_epochs(trace: &CurveTrace, epochs: usize) -> Option<f64> {
    trace.spent.iter().zip(&trace.incumbent).take_while(|(s, _)| **s <= epochs).filter_map(|(_, i)| *i).last()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Workers train side by side: with no rule, four workers finish four full trainings per 200
    /// epochs, in the same round (the epochs spent counted as each trains its last); with successive halving some end early and are replaced at once, and
    /// the budget is spent to the epoch.
    #[test]
    fn asynchronous_workers_share_the_budget() {
        let problem = &problems()[0];
        let setup = |rule, workers| Setup {
            algorithm: "RANDOM_SEARCH".into(),
            config: serde_json::Value::Null,
            rule,
            partials: Partials::Model,
            budget: 400,
            workers,
        };
        let trace = run(problem, &setup(Rule::None, 4), 3).unwrap();
        assert_eq!(trace.spent, vec![197, 198, 199, 200, 397, 398, 399, 400]);
        assert_eq!(trace.full, 8);
        let one = run(problem, &setup(Rule::None, 1), 3).unwrap();
        assert_eq!(one.spent, (1..=8).map(|k| 50 * k).collect::<Vec<_>>(), "one worker is a sequential study");
        let halving = run(problem, &setup(Rule::parse("asha").unwrap(), 4), 3).unwrap();
        assert_eq!(halving.spent.last(), Some(&400));
        assert!(
            halving.spent.len() > 12 && halving.full < halving.spent.len() / 2,
            "{} trials, {} full",
            halving.spent.len(),
            halving.full
        );
        assert!(halving.spent.windows(2).all(|w| w[0] <= w[1]));
    }

    /// ASHA with checkpoints through the rule's own pause and promotion: trials pause and
    /// resume as new trials, some train fully, and the budget is spent.
    #[test]
    fn asha_resume_pauses_and_resumes_until_the_budget_is_spent() {
        // A whole run: trials pause and resume, some train fully, and the budget is spent.
        let setup = Setup {
            algorithm: "RANDOM_SEARCH".into(),
            config: serde_json::Value::Null,
            rule: Rule::Resume,
            partials: Partials::Model,
            budget: 400,
            workers: 1,
        };
        let trace = run(&problems()[0], &setup, 3).unwrap();
        assert_eq!(trace.spent.last(), Some(&400));
        assert!(trace.full >= 1 && trace.spent.len() > 60, "{} pauses and ends, {} full", trace.spent.len(), trace.full);
    }

    #[test]
    fn successive_halving_rules_carry_their_settings_in_their_names() {
        for name in ["asha", "asha-topk:min=3:eta=2", "hyperband:eta=4", "hyperband2-topk:min=2"] {
            assert_eq!(Rule::parse(name).map(Rule::name).as_deref(), Some(name));
        }
        let Some(StoppingSpec::SuccessiveHalving(h)) = Rule::parse("asha:min=2:eta=4").unwrap().spec(30) else { panic!("halving") };
        assert_eq!((h.min_step_count, h.reduction_factor, h.max_step_count), (2.0, 4.0, 30.0));
        for refused in ["asha:eta=1", "asha:min=0", "asha:late=3", "asha:eta", "median:eta=2"] {
            assert_eq!(Rule::parse(refused), None, "{refused}");
        }
    }

    #[test]
    fn curves_rise_to_their_level_and_the_optimum_is_the_best_final_accuracy() {
        for p in problems() {
            let best = p.optimum();
            assert!(best > p.top - p.over - 0.01 && best <= p.top, "{}: {best}", p.name);
            let space = space();
            for i in 0..2000u64 {
                let c = numbers(&space.decode(&bo_core::optimize::sobol::sobol_point(i, 6, 7)));
                assert!(p.accuracy(&c, EPOCHS as f64) <= best + 1e-9, "{}", p.name);
                assert!(p.accuracy(&c, 1.0) < p.accuracy(&c, 25.0) + 1e-9, "{}: curves rise", p.name);
            }
        }
    }
}
