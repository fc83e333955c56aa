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

use std::time::Instant;

use anyhow::{Context, Result};
use bo_core::designer::designer_for;
use bo_core::gp::Hyperparameters;
use bo_core::stopping::decay_curve::DecayCurveModel;
use bo_core::stopping::partial;
use bo_core::stopping::successive_halving::SuccessiveHalving;
use bo_core::stopping::{Finished, StoppingDecision, convex, median_rule};
use bo_core::{
    Assignment, ConvexStopping, Domain, Goal, Measurement, Observation, Outcome, ParamSpec, ParamValue, Scale, SearchSpace, StoppingSpec,
    StudySpec, Trial, TrialState,
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
    noise: f64,
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

/// The early-stopping rule a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Every trial trains fully.
    None,
    /// `medianAutomatedStoppingSpec`.
    Median,
    /// `decayCurveStoppingSpec`.
    DecayCurve,
    /// `convexAutomatedStoppingSpec` (maximum 50 epochs, the other settings default).
    Convex,
    /// `successiveHalvingStoppingSpec` (rungs 1, 3, 9, 27 below 50 epochs, a third goes on).
    SuccessiveHalving,
    /// The same with Hyperband's brackets (`hyperband`: one starting at each rung, `brackets:
    /// 4`; `hyperband2`, `hyperband3`: the first 2 or 3).
    Hyperband(u32),
}

/// What the designer learns from a trial a rule stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partials {
    /// Its final value as the decay-curve model predicts it from its curve, observed with the
    /// prediction's variance as noise of its own, as the service does
    /// (`bo_core::stopping::partial`).
    Model,
    /// The predicted final value taken as if measured (the prediction's spread dropped): the
    /// service before partial trials carried their uncertainty.
    Mean,
    /// As `Model` with half the prediction's standard deviation: a candidate, measured against
    /// `Model` and `Mean`.
    HalfSpread,
    /// Its last value, as if it were the configuration's result (the service before partial
    /// results were modelled).
    Last,
    /// Its predicted final value less one standard deviation of the prediction: a candidate
    /// rule, measured against `Model`.
    Cautious,
}

impl Rule {
    /// By name.
    pub fn parse(name: &str) -> Option<Rule> {
        Some(match name {
            "none" => Rule::None,
            "median" => Rule::Median,
            "decay" => Rule::DecayCurve,
            "convex" => Rule::Convex,
            "asha" => Rule::SuccessiveHalving,
            "hyperband" => Rule::Hyperband(4),
            "hyperband2" => Rule::Hyperband(2),
            "hyperband3" => Rule::Hyperband(3),
            _ => return None,
        })
    }

    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Rule::None => "none",
            Rule::Median => "median",
            Rule::DecayCurve => "decay",
            Rule::Convex => "convex",
            Rule::SuccessiveHalving => "asha",
            Rule::Hyperband(2) => "hyperband2",
            Rule::Hyperband(3) => "hyperband3",
            Rule::Hyperband(_) => "hyperband",
        }
    }

    fn spec(self) -> Option<StoppingSpec> {
        match self {
            Rule::None => None,
            Rule::Median => Some(StoppingSpec::Median { use_elapsed_duration: false }),
            Rule::DecayCurve => Some(StoppingSpec::DecayCurve { use_elapsed_duration: false }),
            Rule::Convex => Some(StoppingSpec::Convex(ConvexStopping { max_step_count: Some(EPOCHS as f64), ..ConvexStopping::default() })),
            Rule::SuccessiveHalving | Rule::Hyperband(_) => Some(StoppingSpec::SuccessiveHalving(SuccessiveHalving {
                min_step_count: 1.0,
                max_step_count: EPOCHS as f64,
                reduction_factor: 3.0,
                use_elapsed_duration: false,
                brackets: if let Rule::Hyperband(b) = self { b } else { 1 },
            })),
        }
    }
}

/// One seed's run, as the peers' script writes it.
#[derive(Serialize)]
pub struct CurveTrace {
    /// The seed.
    pub seed: u64,
    /// After each trial: epochs spent so far and the true final accuracy of the incumbent (the
    /// fully trained trial with the best reported final value; `None` before one).
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

/// Runs `algorithm` with `rule` on `problem` until `budget` epochs are spent, the designer
/// learning stopped trials as `partials` says.
pub fn run(
    problem: &CurveProblem,
    algorithm: &str,
    config: serde_json::Value,
    rule: Rule,
    partials: Partials,
    budget: usize,
    seed: u64,
) -> Result<CurveTrace> {
    let mut spec = StudySpec::new("accuracy", Goal::Maximize, space(), algorithm).with_config(config);
    spec.stopping = rule.spec();
    let designer = designer_for(&spec).with_context(|| format!("algorithm {algorithm}"))?;
    let study = bo_core::Problem { spec: spec.clone(), seed, priors: Vec::new() };
    let mut rng = StdRng::seed_from_u64(seed);
    let mut noise = StdRng::seed_from_u64(seed ^ 0x5eed_c0de);
    let objective = spec.objective().clone();
    let (mut history, mut trials): (Vec<Observation>, Vec<Trial>) = (Vec::new(), Vec::new());
    let mut warm = None;
    let (mut curve_model, mut curve_warm): (Option<DecayCurveModel>, Option<Hyperparameters>) = (None, None);
    let mut finished = Finished::default();
    let mut trace = CurveTrace { seed, spent: vec![], incumbent: vec![], full: 0, rule_seconds: 0.0, suggest_seconds: 0.0 };
    let (mut spent, mut best_reported): (usize, Option<(f64, f64)>) = (0, None);
    while spent < budget {
        let start = Instant::now();
        let fitted = designer.fit(&study, &history, warm.as_ref(), &mut rng)?;
        let a = fitted.model.suggest(&[], 1, &mut rng)?.into_iter().next().context("the designer proposed nothing")?;
        trace.suggest_seconds += start.elapsed().as_secs_f64();
        warm = Some(fitted.state);
        let c = numbers(&a);
        let offset = gauss(&mut noise) * problem.noise;
        let mut trial = Trial {
            id: trials.len() as i64 + 1,
            state: TrialState::Active,
            assignment: a.clone(),
            measurements: vec![],
            final_measurement: None,
            client_id: String::new(),
            infeasible_reason: String::new(),
            start_time_ms: 0,
            end_time_ms: None,
            stop_time_ms: None,
        };
        let mut stopped = None;
        for t in 1..=EPOCHS {
            if spent >= budget {
                break;
            }
            spent += 1;
            let y = problem.accuracy(&c, t as f64) + offset + gauss(&mut noise) * problem.noise;
            trial.measurements.push(Measurement {
                step_count: t as i64,
                elapsed_secs: t as f64,
                metrics: [("accuracy".to_owned(), y)].into(),
            });
            if t == EPOCHS {
                break;
            }
            let start = Instant::now();
            let decision = match rule {
                Rule::None => StoppingDecision::go_on(""),
                Rule::Median => median_rule(&objective, &trial, &trials, false),
                Rule::DecayCurve => match &curve_model {
                    Some(m) => m.decide(&objective, &trial),
                    None => StoppingDecision::go_on(""),
                },
                Rule::Convex => match &spec.stopping {
                    Some(StoppingSpec::Convex(c)) => convex::decide(c, &spec, &finished, &trial),
                    _ => unreachable!("the convex rule's spec"),
                },
                Rule::SuccessiveHalving | Rule::Hyperband(_) => bo_core::stopping::decide(&spec, &trial, &trials, &mut rng),
            };
            trace.rule_seconds += start.elapsed().as_secs_f64();
            if decision.should_stop {
                stopped = Some(decision);
                break;
            }
        }
        let trained_fully = trial.measurements.len() == EPOCHS;
        if stopped.is_some() {
            trial.stop_time_ms = Some(0);
        }
        if let Some(m) = stopped.and_then(|d| d.last_measurement) {
            trial.measurements.push(m);
        }
        let last = trial.measurements.last().cloned().context("a measurement")?;
        trial.final_measurement = Some(last.clone());
        trial.state = TrialState::Succeeded;
        let reported = last.metrics["accuracy"];
        if trained_fully {
            trace.full += 1;
            if best_reported.is_none_or(|(r, _)| reported > r) {
                best_reported = Some((reported, problem.accuracy(&c, EPOCHS as f64)));
            }
        }
        history.push(Observation { objective_sd: None, assignment: a, outcome: Outcome::Measured(last.metrics.clone()) });
        trials.push(trial);
        // The rules' view of the finished trials, as a service reads it at each data version, and
        // the partial trials' predicted final values, from the same model.
        let model_partials = partials != Partials::Last && trials.iter().any(Trial::is_partial);
        if matches!(rule, Rule::DecayCurve | Rule::Convex) || model_partials {
            let start = Instant::now();
            finished = Finished::from_trials(&spec, &trials, 0, false);
            if rule == Rule::DecayCurve || model_partials {
                curve_model = DecayCurveModel::fit(&spec, &finished, curve_warm.as_ref(), &mut rng)?;
                if let Some(m) = &curve_model {
                    curve_warm = Some(m.hyperparameters());
                }
            }
            trace.rule_seconds += start.elapsed().as_secs_f64();
        }
        if model_partials && let Some(m) = &curve_model {
            let mut estimates = partial::estimates(m, &trials, &partial::curves_of(&spec, &trials));
            if partials == Partials::Cautious {
                // The objective is maximised here.
                estimates.values_mut().for_each(|e| e.mean -= e.sd);
            }
            history = partial::observations(&spec, &trials, &estimates);
            match partials {
                Partials::Mean => history.iter_mut().for_each(|o| o.objective_sd = None),
                Partials::HalfSpread => history.iter_mut().for_each(|o| o.objective_sd = o.objective_sd.map(|s| 0.5 * s)),
                _ => {}
            }
        }
        trace.spent.push(spent);
        trace.incumbent.push(best_reported.map(|(_, truth)| truth));
    }
    Ok(trace)
}

fn gauss(rng: &mut StdRng) -> f64 {
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
