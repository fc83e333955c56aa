//! The optimal trials of a study: the best succeeded trial for one metric, the Pareto front for
//! several (a trial is on the front when no other trial is at least as good on every metric and
//! strictly better on one). Trials whose final measurement lacks a metric take no part.

use crate::study::MetricSpec;
use crate::trial::{Trial, TrialState};

/// The optimal trials among `trials`, in the order given.
pub fn optimal_trials<'a>(metrics: &[MetricSpec], trials: &'a [Trial]) -> Vec<&'a Trial> {
    let scored: Vec<(&Trial, Vec<f64>)> = trials
        .iter()
        .filter(|t| t.state == TrialState::Succeeded)
        .filter_map(|t| {
            let m = t.final_measurement.as_ref()?;
            let values: Option<Vec<f64>> = metrics.iter().map(|spec| m.metrics.get(&spec.id).copied()).collect();
            Some((t, values?))
        })
        .collect();
    if metrics.len() == 1 {
        let goal = metrics[0].goal;
        let best = scored.iter().reduce(|a, b| if goal.better(b.1[0], a.1[0]) { b } else { a });
        return best.map(|(t, _)| *t).into_iter().collect();
    }
    let dominates = |a: &[f64], b: &[f64]| {
        let mut strictly = false;
        for ((x, y), spec) in a.iter().zip(b).zip(metrics) {
            if spec.goal.better(*y, *x) {
                return false;
            }
            strictly |= spec.goal.better(*x, *y);
        }
        strictly
    };
    scored.iter().filter(|(_, v)| !scored.iter().any(|(_, w)| dominates(w, v))).map(|(t, _)| *t).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::study::Goal;
    use crate::trial::{Assignment, Measurement};

    fn done(id: i64, values: &[(&str, f64)]) -> Trial {
        Trial {
            id,
            state: TrialState::Succeeded,
            assignment: Assignment::default(),
            measurements: vec![],
            final_measurement: Some(Measurement {
                metrics: values.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect::<BTreeMap<_, _>>(),
                ..Default::default()
            }),
            client_id: String::new(),
            infeasible_reason: String::new(),
            start_time_ms: 0,
            end_time_ms: None,
        }
    }

    #[test]
    fn single_metric_picks_the_best_by_goal() {
        let trials = vec![done(1, &[("a", 1.0)]), done(2, &[("a", 3.0)]), done(3, &[("a", 2.0)])];
        let max = [MetricSpec { id: "a".into(), goal: Goal::Maximize }];
        assert_eq!(optimal_trials(&max, &trials)[0].id, 2);
        let min = [MetricSpec { id: "a".into(), goal: Goal::Minimize }];
        assert_eq!(optimal_trials(&min, &trials)[0].id, 1);
    }

    #[test]
    fn several_metrics_give_the_pareto_front() {
        let metrics = [MetricSpec { id: "acc".into(), goal: Goal::Maximize }, MetricSpec { id: "latency".into(), goal: Goal::Minimize }];
        let trials = vec![
            done(1, &[("acc", 0.9), ("latency", 10.0)]),
            done(2, &[("acc", 0.8), ("latency", 5.0)]),
            done(3, &[("acc", 0.8), ("latency", 11.0)]), // dominated by 1 and 2
            done(4, &[("acc", 0.95), ("latency", 20.0)]),
            done(5, &[("acc", 0.99)]), // lacks latency
        ];
        let ids: Vec<i64> = optimal_trials(&metrics, &trials).iter().map(|t| t.id).collect();
        assert_eq!(ids, vec![1, 2, 4]);
    }
}
