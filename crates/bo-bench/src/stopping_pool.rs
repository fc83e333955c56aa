//! A stopping rule on its own (issue 72: where the median rule should first look, and after how
//! many completed trials): random search over a pool of curves — the synthetic family's, or
//! real training curves ([`RealCurves`]) — drawn with replacement, one trial at a time, each
//! shown a step at a time and judged after each step by bo-core's own rule ([`decide`]) against
//! the trials before it, as the service judges them. A stopped trial stays in the study as a
//! partial one, as the service keeps it. Random search takes the designer out of the
//! comparison: every rule sees the same draws, so what differs is only what the rule stops.
//!
//! Must not do: fit a designer; `bo-bench curves` measures rules with bo's designers.

use anyhow::Result;
use bo_core::stopping::decide;
use bo_core::stopping::spec::{MedianOf, MedianStopping, StoppingSpec};
use bo_core::{Goal, Measurement, StudySpec, Trial, TrialState};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::pool::Pool;

/// One arm: no rule, or the median rule with its settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Arm {
    /// As given on the command line.
    pub name: String,
    rule: Option<MedianStopping>,
    /// `minStepCount` as a fraction of the curves' length, resolved per pool.
    first_fraction: Option<f64>,
}

impl Arm {
    /// `none`, or `median` followed by any of `:first=K` (`minStepCount` K steps), `:first=F%`
    /// (F percent of the curve's length), `:min=N` (`minCompletedTrials`), `:every=K`
    /// (`intervalSteps`), `:of=value` or `:of=average` (`medianOf`).
    pub fn parse(name: &str) -> Result<Arm> {
        if name == "none" {
            return Ok(Arm { name: name.into(), rule: None, first_fraction: None });
        }
        let mut parts = name.split(':');
        anyhow::ensure!(
            parts.next() == Some("median"),
            "an arm is none or median[:first=K|F%][:min=N][:every=K][:of=value|average], got {name}"
        );
        let (mut rule, mut first_fraction) = (MedianStopping::default(), None);
        for part in parts {
            let (key, value) = part.split_once('=').ok_or_else(|| anyhow::anyhow!("{name}: {part} is not key=value"))?;
            match key {
                "first" => match value.strip_suffix('%') {
                    Some(percent) => first_fraction = Some(percent.parse::<f64>()? / 100.0),
                    None => rule.min_step_count = Some(value.parse()?),
                },
                "min" => rule.min_completed_trials = Some(value.parse()?),
                "every" => rule.interval_steps = Some(value.parse()?),
                "of" if value == "value" => rule.median_of = MedianOf::ValueAtPosition,
                "of" if value == "average" => rule.median_of = MedianOf::RunningAverage,
                other => anyhow::bail!("{name}: {other}={value} is not first=, min=, every= or of=value|average"),
            }
        }
        rule.check("median").map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
        Ok(Arm { name: name.into(), rule: Some(rule), first_fraction })
    }

    fn spec(&self, steps: usize) -> Option<StoppingSpec> {
        let mut rule = self.rule.clone()?;
        if let Some(f) = self.first_fraction {
            rule.min_step_count = Some((f * steps as f64).round());
        }
        Some(StoppingSpec::Median(rule))
    }
}

/// One run's record.
#[derive(Clone, Debug)]
pub struct Run {
    /// The pool's best final value less the incumbent's, at a quarter, half and all of the
    /// budget (`None` while nothing is fully trained).
    pub regret: [Option<f64>; 3],
    /// Trials run.
    pub trials: usize,
    /// Trials trained in full.
    pub full: usize,
    /// Trials stopped.
    pub stopped: usize,
    /// Trials stopped at the first step the rule may judge (`minStepCount`, or step 1).
    pub stopped_first: usize,
}

/// Random search over `pool` under `arm` until `trainings` full curves' steps are spent.
pub fn run(pool: &Pool, arm: &Arm, trainings: usize, seed: u64) -> Run {
    let steps = pool.steps;
    let budget = trainings * steps;
    let mut spec = StudySpec::new("value", Goal::Maximize, pool.space.clone(), "RANDOM_SEARCH");
    spec.stopping = arm.spec(steps);
    let first_look = match &spec.stopping {
        Some(StoppingSpec::Median(rule)) => rule.min_step_count.unwrap_or(1.0).ceil().max(1.0) as usize,
        _ => 1,
    };
    let best_possible = pool.best_final();
    let mut draws = StdRng::seed_from_u64(seed);
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
    let marks = [budget / 4, budget / 2, budget];
    let mut record = Run { regret: [None; 3], trials: 0, full: 0, stopped: 0, stopped_first: 0 };
    let (mut spent, mut incumbent) = (0usize, None::<f64>);
    let mut done: Vec<Trial> = Vec::new();
    while spent < budget {
        let sample = &pool.samples[draws.random_range(0..pool.samples.len())];
        let mut trial = Trial::new(done.len() as i64 + 1, sample.assignment.clone());
        for step in 1..=steps.min(budget - spent) {
            spent += 1;
            let value = sample.curve[step - 1];
            trial.measurements.push(Measurement {
                step_count: step as i64,
                elapsed_secs: step as f64,
                metrics: [("value".to_owned(), value)].into(),
            });
            let finished = step == steps;
            if finished {
                record.full += 1;
                incumbent = Some(incumbent.map_or(value, |i| i.max(value)));
            }
            for (k, mark) in marks.iter().enumerate() {
                if spent == *mark {
                    record.regret[k] = incumbent.map(|i| best_possible - i);
                }
            }
            if finished {
                break;
            }
            if decide(&spec, &trial, &done, &mut rng).should_stop {
                record.stopped += 1;
                record.stopped_first += usize::from(step == first_look);
                trial.stop_time_ms = Some(0);
                break;
            }
        }
        trial.final_measurement = trial.measurements.last().cloned();
        trial.state = TrialState::Succeeded;
        done.push(trial);
    }
    record.trials = done.len();
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arms_parse_their_settings_and_refuse_the_rest() {
        let arm = Arm::parse("median:first=10%:min=5:of=value").unwrap();
        let Some(StoppingSpec::Median(rule)) = arm.spec(50) else { panic!("a median rule") };
        assert_eq!((rule.min_step_count, rule.min_completed_trials, rule.median_of), (Some(5.0), Some(5), MedianOf::ValueAtPosition));
        assert_eq!(
            Arm::parse("median:first=3").unwrap().spec(50),
            Some(StoppingSpec::Median(MedianStopping { min_step_count: Some(3.0), ..Default::default() }))
        );
        assert_eq!(Arm::parse("none").unwrap().spec(50), None);
        assert!(Arm::parse("decay").unwrap_err().to_string().contains("none or median"));
        assert!(Arm::parse("median:min=0").unwrap_err().to_string().contains("minCompletedTrials"));
        assert!(Arm::parse("median:late=3").unwrap_err().to_string().contains("late=3"));
    }

    /// Without a rule every trial trains in full and the budget buys exactly its trainings; the
    /// median rule stops some, trains more trials on the same budget, and regrets are never
    /// negative.
    #[test]
    fn the_budget_is_spent_as_the_rule_decides() {
        let problem = crate::curves::problems().into_iter().find(|p| p.name == "lc_a").unwrap();
        let pool = Pool::synthetic(&problem, 60, 1);
        let none = run(&pool, &Arm::parse("none").unwrap(), 8, 3);
        assert_eq!((none.trials, none.full, none.stopped), (8, 8, 0));
        let median = run(&pool, &Arm::parse("median").unwrap(), 8, 3);
        assert!(median.stopped > 0 && median.trials > 8 && median.stopped_first <= median.stopped, "{median:?}");
        for r in [&none, &median] {
            assert!(r.regret[2].is_some_and(|g| g >= 0.0), "{r:?}");
        }
    }
}
