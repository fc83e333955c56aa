//! Partial results: a trial asked to stop before it completed ([`Trial::is_partial`]) ends on a
//! point of a curve cut short — an error of 0.64 after one epoch for a configuration that would
//! finish at 0.36. A designer that took that value as the configuration's result would learn that
//! its region is worse than it is. Instead, each partial trial's objective is its final value
//! as the decay-curve model predicts it from the trial's own curve ([`DecayCurveModel`]: a GP
//! over parameters × position, fitted on the study's curves, conditioned on the trial's points),
//! and the designers learn from that.
//!
//! Where no model can be fitted yet (fewer than [`super::decay_curve::MIN_CURVES`] curves) or the
//! trial has no curve, its last value stands. The prediction's standard deviation goes with it
//! ([`Observation::objective_sd`]): the GP designers observe the estimate with that much noise
//! of its own on top of the fitted noise, so a trial stopped after one epoch pulls the model
//! less than one stopped near its end.
//!
//! Under successive halving ([`predicts`] is false) a partial trial is learnt at its last value,
//! its value at the rung where it stopped: values measured at the budgets, as BOHB's models
//! learn them (Falkner et al. 2018), not predictions of final ones, and ranked as Optuna's TPE
//! ranks pruned trials, below the ones that went further. There every stopped trial ends at one
//! of a few shared positions, a trial that went on is one the rule found better at each rung it
//! passed, and the values rise (or fall) along the curve, so the last values rank the trials as
//! the rule did. The curve model, fitted on the few promoted trials that finished, predicts a
//! trial stopped at the first rung near an average finished one with a wide spread, and the
//! rule's verdict on its region is lost. Measured in docs/journal/benchmarks.md ("Successive halving
//! learns the rung values"): the predictions lost at every budget with four workers, and at a
//! quarter and a half of it with one; with one worker they won at the full budget.
//!
//! Must not do: I/O. A service reads the partial trials' thinned curves from its database
//! and keeps one curve model per data version.

use std::collections::BTreeMap;

use super::curves::{CURVE_POINTS, points, thin};
use super::decay_curve::DecayCurveModel;
use super::spec::StoppingSpec;
use crate::study::StudySpec;
use crate::trial::{Observation, Outcome, Trial};

/// Whether the designers learn `study`'s partial trials at the curve model's predicted final
/// values: not under successive halving, where the last value is the trial's value at its rung
/// (see the module's header).
pub fn predicts(study: &StudySpec) -> bool {
    !matches!(study.stopping, Some(StoppingSpec::SuccessiveHalving(_)))
}

/// A partial trial's predicted final objective.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// The predicted mean.
    pub mean: f64,
    /// Its standard deviation.
    pub sd: f64,
}

/// The predicted final objective of each partial trial among `trials` whose curve is in `curves`
/// (by trial id, thinned points (position, objective)): the ones the model could predict.
pub fn estimates(model: &DecayCurveModel, trials: &[Trial], curves: &BTreeMap<i64, Vec<(f64, f64)>>) -> BTreeMap<i64, Estimate> {
    trials
        .iter()
        .filter(|t| t.is_partial() && matches!(t.state, crate::trial::TrialState::Succeeded))
        .filter_map(|t| {
            let points = curves.get(&t.id).filter(|p| !p.is_empty())?;
            let (mean, sd) = model.predict_final(&t.assignment, points).ok()?;
            (mean.is_finite() && sd.is_finite()).then_some((t.id, Estimate { mean, sd }))
        })
        .collect()
}

/// The thinned curves of the partial trials among `trials` (with their measurements), as a
/// service reads them from its database.
pub fn curves_of(study: &StudySpec, trials: &[Trial]) -> BTreeMap<i64, Vec<(f64, f64)>> {
    let use_elapsed = study.stopping.as_ref().is_some_and(|s| s.use_elapsed());
    trials
        .iter()
        .filter(|t| t.is_partial())
        .map(|t| (t.id, thin(&points(study.objective(), t, use_elapsed), CURVE_POINTS)))
        .filter(|(_, p)| !p.is_empty())
        .collect()
}

/// What a designer learns from `trials`: each completed trial's observation, a partial trial's
/// objective replaced by its estimate where there is one, and none of a trial a later one
/// resumes ([`Trial::superseded`]: the newest trial of a chain stands for its configuration).
pub fn observations(study: &StudySpec, trials: &[Trial], estimates: &BTreeMap<i64, Estimate>) -> Vec<Observation> {
    let objective = &study.objective().id;
    let superseded = Trial::superseded(trials);
    trials
        .iter()
        .filter(|t| !superseded.contains(&t.id))
        .filter_map(|t| {
            let mut o = Observation::from_trial(t)?;
            if let (Some(e), Outcome::Measured(metrics)) = (estimates.get(&t.id), &mut o.outcome)
                && let Some(v) = metrics.get_mut(objective)
            {
                *v = e.mean;
                o.objective_sd = Some(e.sd);
            }
            Some(o)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::stopping::curves::testing::{curve, finished, running, study};
    use crate::stopping::spec::StoppingSpec;
    use crate::trial::{Measurement, TrialState};

    /// A trial stopped after `steps` of 50 at (x, y), completed with its last value.
    fn stopped(id: i64, x: f64, y: f64, steps: usize) -> Trial {
        let mut t = running(x, y, steps);
        t.id = id;
        t.state = TrialState::Succeeded;
        t.stop_time_ms = Some(1);
        t.final_measurement = t.measurements.last().cloned();
        t
    }

    /// The model sees the step a partial trial stopped at: the same configuration stopped after
    /// 3 or 30 steps ends on very different values, yet is predicted to end near the same truth,
    /// and the designer's observation carries the prediction, not the last value.
    #[test]
    fn a_partial_trial_is_observed_at_its_predicted_final_value() {
        let spec = study(StoppingSpec::DecayCurve { use_elapsed_duration: false });
        assert!(predicts(&spec));
        let model = DecayCurveModel::fit(&spec, &finished(12), None, &mut StdRng::seed_from_u64(1)).unwrap().expect("enough curves");
        let truth = curve(0.4, 0.5, 50).last().unwrap().1;
        let trials = vec![stopped(1, 0.4, 0.5, 3), stopped(2, 0.4, 0.5, 30)];
        let curves = curves_of(&spec, &trials);
        assert_eq!(curves[&1].len(), 3);
        let estimates = estimates(&model, &trials, &curves);
        for (id, steps) in [(1, 3), (2, 30)] {
            let last = trials[id as usize - 1].final_measurement.as_ref().unwrap().metrics["obj"];
            let e = estimates[&id];
            assert!((e.mean - truth).abs() < (last - truth).abs(), "after {steps} steps: {e:?}, last {last}, truth {truth}");
            assert!((e.mean - truth).abs() < 3.0 * e.sd + 0.02, "after {steps} steps: {e:?}, truth {truth}");
        }
        // Fewer steps seen, less certain.
        assert!(estimates[&1].sd > estimates[&2].sd, "{estimates:?}");
        let observed = observations(&spec, &trials, &estimates);
        for (o, id) in observed.iter().zip([1, 2]) {
            let Outcome::Measured(m) = &o.outcome else { panic!("measured") };
            assert_eq!(m["obj"], estimates[&id].mean);
            assert_eq!(o.objective_sd, Some(estimates[&id].sd), "the estimate's spread goes with it");
        }
    }

    /// A trial another resumes stands for its configuration no more: the designers learn the
    /// newest trial of the chain alone, once it completes (pending until then).
    #[test]
    fn a_resumed_trial_is_learnt_through_its_newest_trial_only() {
        let spec = study(StoppingSpec::DecayCurve { use_elapsed_duration: false });
        let paused = stopped(1, 0.3, 0.5, 9);
        let mut next = Trial { resumed: Some(crate::trial::Resumed { from: 1, at: 9.0 }), ..running(0.3, 0.5, 20) };
        next.id = 2;
        assert_eq!(observations(&spec, &[paused.clone(), next.clone()], &BTreeMap::new()), vec![], "running: pending");
        next.state = TrialState::Succeeded;
        next.final_measurement = next.measurements.last().cloned();
        let observed = observations(&spec, &[paused.clone(), next.clone()], &BTreeMap::new());
        assert_eq!(observed, vec![Observation::from_trial(&next).unwrap()]);
        assert_eq!(observations(&spec, std::slice::from_ref(&paused), &BTreeMap::new()).len(), 1, "alone, the paused trial is learnt");
    }

    /// Under successive halving the designers learn a stopped trial at its rung value; under
    /// every other rule, and with none (a trial stopped by hand), at the prediction.
    #[test]
    fn successive_halving_learns_the_rung_values() {
        let halving = study(StoppingSpec::SuccessiveHalving(crate::stopping::spec::SuccessiveHalving {
            min_step_count: 1.0,
            max_step_count: 50.0,
            reduction_factor: 3.0,
            use_elapsed_duration: false,
            brackets: 4,
            promotion: crate::stopping::spec::Promotion::TopK,
            resume: false,
        }));
        assert!(!predicts(&halving));
        for rule in [
            StoppingSpec::Median(Default::default()),
            StoppingSpec::DecayCurve { use_elapsed_duration: true },
            StoppingSpec::Convex(Default::default()),
        ] {
            assert!(predicts(&study(rule.clone())), "{rule:?}");
        }
        let mut none = halving.clone();
        none.stopping = None;
        assert!(predicts(&none));
    }

    /// Trials trained in full, and partial ones without a curve or an estimate, are observed as
    /// they ended.
    #[test]
    fn full_trials_and_unpredicted_ones_keep_their_values() {
        let spec = study(StoppingSpec::DecayCurve { use_elapsed_duration: false });
        let mut full = stopped(1, 0.2, 0.2, 50);
        full.stop_time_ms = None;
        let mut bare = stopped(2, 0.3, 0.3, 5);
        bare.measurements.clear();
        bare.final_measurement = Some(Measurement { metrics: [("obj".to_owned(), 0.25)].into(), ..Measurement::default() });
        let trials = vec![full.clone(), bare];
        let curves = curves_of(&spec, &trials);
        assert!(curves.is_empty(), "a trial trained in full or without measurements has no partial curve");
        let model = DecayCurveModel::fit(&spec, &finished(12), None, &mut StdRng::seed_from_u64(1)).unwrap().unwrap();
        let estimates = estimates(&model, &trials, &curves);
        assert!(estimates.is_empty());
        let observed = observations(&spec, &trials, &estimates);
        let values: Vec<f64> = observed.iter().map(|o| if let Outcome::Measured(m) = &o.outcome { m["obj"] } else { f64::NAN }).collect();
        assert_eq!(values, vec![full.final_measurement.unwrap().metrics["obj"], 0.25]);
        assert!(observed.iter().all(|o| o.objective_sd.is_none()), "measured values carry no spread");
    }
}
