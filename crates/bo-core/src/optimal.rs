//! The optimal trials of a study: the best succeeded trial for one metric, the Pareto front for
//! several (a trial is on the front when no other trial is at least as good on every metric and
//! strictly better on one). Trials whose final measurement lacks a metric take no part, and
//! neither do unsafe ones (a safety metric on the wrong side of its threshold): safety metrics
//! are constraints, not objectives.

use rand::SeedableRng;

use crate::hypervolume::Work;
use crate::study::{Goal, MetricSpec};
use crate::trial::{Measurement, Trial, TrialState};

/// The ids of the optimal trials among `finals` (each SUCCEEDED trial's id and final
/// measurement), best first, at most `cap` of them: the best trial for one metric; for several,
/// the Pareto front, ordered by the first objective (better first), then the next, ties by id.
/// The first is the study's best trial, whatever the number of objectives: the one notion of
/// "best" every surface (the API's order, the model page, the clients) takes. A front larger than `cap` keeps the `cap` trials that add the most
/// hypervolume (each one's exclusive contribution, against a reference point from the front:
/// see [`crate::hypervolume`]), so what is kept spreads along the front: exactly for two
/// metrics, and for more where the exact contributions take at most a tenth of [`CUT_CHECKS`]
/// steps; beyond (they cost up to n·2^d: minutes for a thousand points of four metrics)
/// estimated within [`CUT_CHECKS`] dominance checks. With three
/// metrics or more the front is gathered up to [`FRONT_SCAN_LIMIT`] trials, in order of the
/// first metric, and the cut is chosen among those.
///
/// Time O(n log n + n·f·m) for n trials, a front of f ≤ [`FRONT_SCAN_LIMIT`] and m metrics
/// (the trials are sorted best first on the metrics in turn, so a trial is dominated only by
/// one before it, and only the front found so far need be checked), plus O(CUT_CHECKS·m) for
/// a cut: bounded whatever the number of metrics. The estimates are seeded by the front's size,
/// so the same trials give the same answer.
pub fn optimal_ids(all_metrics: &[MetricSpec], finals: &[(i64, &Measurement)], cap: usize) -> Vec<i64> {
    optimal_ids_within(all_metrics, finals, cap, CUT_CHECKS)
}

/// As [`optimal_ids`], with `checks` dominance checks for a cut of three or more metrics.
pub fn optimal_ids_within(all_metrics: &[MetricSpec], finals: &[(i64, &Measurement)], cap: usize, checks: u64) -> Vec<i64> {
    let metrics: Vec<MetricSpec> = all_metrics.iter().filter(|m| m.safety.is_none()).cloned().collect();
    let safe = |m: &Measurement| all_metrics.iter().all(|s| m.metrics.get(&s.id).is_none_or(|&v| s.is_safe(v)));
    let scored: Vec<(i64, Vec<f64>)> = finals
        .iter()
        .filter(|(_, m)| safe(m))
        .filter_map(|(id, m)| {
            let values: Option<Vec<f64>> = metrics.iter().map(|spec| m.metrics.get(&spec.id).copied()).collect();
            Some((*id, values?))
        })
        .collect();
    let goals: Vec<Goal> = metrics.iter().map(|m| m.goal).collect();
    front_ids(&goals, scored, cap, checks)
}

/// The optimal trials among `scored` — each safe trial's id and its values of the objectives
/// whose goals are `goals`, in order — as [`optimal_ids_within`] chooses them: for a caller
/// that read the values alone (the service reads them out of the stored measurements in SQL).
pub fn front_ids(goals: &[Goal], scored: Vec<(i64, Vec<f64>)>, cap: usize, checks: u64) -> Vec<i64> {
    if goals.is_empty() {
        return Vec::new();
    }
    if goals.len() == 1 {
        let goal = goals[0];
        let best = scored.iter().reduce(|a, b| if goal.better(b.1[0], a.1[0]) { b } else { a });
        return best.map(|(id, _)| *id).into_iter().take(cap).collect();
    }
    // Best first on each metric in turn (larger is better once minimised metrics are negated).
    let oriented = |v: &[f64]| -> Vec<f64> { v.iter().zip(goals).map(|(x, goal)| if goal.better(1.0, 0.0) { *x } else { -*x }).collect() };
    let mut order: Vec<(i64, Vec<f64>)> = scored.iter().map(|(id, v)| (*id, oriented(v))).collect();
    order.sort_by(|a, b| {
        b.1.iter().zip(&a.1).map(|(x, y)| x.total_cmp(y)).find(|o| o.is_ne()).unwrap_or(std::cmp::Ordering::Equal).then(a.0.cmp(&b.0))
    });
    let dominates = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| x >= y) && a.iter().zip(b).any(|(x, y)| x > y);
    let mut front: Vec<(i64, Vec<f64>)> = Vec::new();
    if goals.len() == 2 {
        // Sorted by the first metric, then the second: a trial is dominated exactly when an
        // earlier one is higher on the second, or as high with a larger first (not a copy).
        let (mut top, mut top_first) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
        for (id, v) in order {
            if v[1] > top {
                (top, top_first) = (v[1], v[0]);
                front.push((id, v));
            } else if v[1] == top && v[0] == top_first {
                front.push((id, v));
            }
        }
    } else {
        for (id, v) in order {
            if front.len() > cap.max(FRONT_SCAN_LIMIT) {
                break;
            }
            if !front.iter().any(|(_, w)| dominates(w, &v)) {
                front.push((id, v));
            }
        }
    }
    if front.len() > cap {
        // Copies of a point share its contribution (counted once, it would be 0 for each).
        let mut points: Vec<Vec<f64>> = front.iter().map(|(_, v)| v.clone()).collect();
        points.sort_by(|a, b| lex(a, b));
        points.dedup();
        if let Some(reference) = crate::hypervolume::reference_point(&points) {
            // Exact where it costs no more than the estimate would (always for two metrics),
            // else estimated.
            let distinct = match crate::hypervolume::contributions_within(&points, &reference, &mut Work::at_most(checks / 10)) {
                Some(exact) => exact,
                None => {
                    let mut rng = rand::rngs::StdRng::seed_from_u64(points.len() as u64);
                    crate::hypervolume::estimated_contributions(&points, &reference, checks, &mut rng)
                }
            };
            // Each trial: its point's contribution, and which copy of the point it is (0 for
            // the lowest id): every distinct point is kept before a second copy of any.
            let mut copies = vec![0usize; points.len()];
            let mut by_id: Vec<usize> = (0..front.len()).collect();
            by_id.sort_by_key(|&i| front[i].0);
            let mut key = vec![(0usize, 0.0f64); front.len()];
            for i in by_id {
                let k = points.binary_search_by(|p| lex(p, &front[i].1)).unwrap_or(0);
                key[i] = (copies[k], distinct[k]);
                copies[k] += 1;
            }
            let mut ranked: Vec<usize> = (0..front.len()).collect();
            ranked.sort_by(|&a, &b| key[a].0.cmp(&key[b].0).then(key[b].1.total_cmp(&key[a].1)).then(front[a].0.cmp(&front[b].0)));
            ranked.truncate(cap);
            ranked.sort_unstable();
            front = ranked.into_iter().map(|i| front[i].clone()).collect();
        } else {
            front.truncate(cap);
        }
    }
    front.into_iter().map(|(id, _)| id).collect()
}

fn lex(a: &[f64], b: &[f64]) -> std::cmp::Ordering {
    a.iter().zip(b).map(|(x, y)| x.total_cmp(y)).find(|o| o.is_ne()).unwrap_or(std::cmp::Ordering::Equal)
}

/// The most trials of a front of three or more metrics gathered before it is cut (in order of
/// the first metric): the cut is chosen among these.
pub const FRONT_SCAN_LIMIT: usize = 2_000;

/// Dominance checks the estimate of a cut of three or more metrics may make; the exact
/// contributions are tried first within a tenth of it in steps ([`crate::hypervolume::Work`]).
/// Measured (`bo-bench fronts`): 0.2–0.7 s on one core for fronts of 1,100 to 2,000 trials of 3
/// to 20 objectives cut to 1,000, keeping 99.7–99.9 % of the exact cut's hypervolume where that
/// could be computed (3 and 4 objectives, 1,100 trials).
pub const CUT_CHECKS: u64 = 50_000_000;

/// The optimal trials among `trials`, in the order given (see [`optimal_ids`]; no cap).
pub fn optimal_trials<'a>(metrics: &[MetricSpec], trials: &'a [Trial]) -> Vec<&'a Trial> {
    let finals: Vec<(i64, &Measurement)> =
        trials.iter().filter(|t| t.state == TrialState::Succeeded).filter_map(|t| Some((t.id, t.final_measurement.as_ref()?))).collect();
    let ids: std::collections::HashSet<i64> = optimal_ids(metrics, &finals, usize::MAX).into_iter().collect();
    trials.iter().filter(|t| ids.contains(&t.id)).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::study::Goal;
    use crate::trial::{Assignment, Measurement};

    fn done(id: i64, values: &[(&str, f64)]) -> Trial {
        Trial {
            state: TrialState::Succeeded,
            final_measurement: Some(Measurement {
                metrics: values.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect::<BTreeMap<_, _>>(),
                ..Default::default()
            }),
            ..Trial::new(id, Assignment::default())
        }
    }

    #[test]
    fn single_metric_picks_the_best_by_goal() {
        let trials = vec![done(1, &[("a", 1.0)]), done(2, &[("a", 3.0)]), done(3, &[("a", 2.0)])];
        let max = [MetricSpec::objective("a", Goal::Maximize)];
        assert_eq!(optimal_trials(&max, &trials)[0].id, 2);
        let min = [MetricSpec::objective("a", Goal::Minimize)];
        assert_eq!(optimal_trials(&min, &trials)[0].id, 1);
    }

    /// A safety metric is a constraint: unsafe trials are never optimal, trials that do not report
    /// it are safe (as OSS Vizier counts them), and it takes no part in the front.
    #[test]
    fn unsafe_trials_are_left_out_and_safety_is_no_objective() {
        let safety = |goal| MetricSpec {
            safety: Some(crate::study::Safety { threshold: 1.0, desired_min_safe_fraction: 0.0 }),
            ..MetricSpec::objective("cost", goal)
        };
        let trials = vec![
            done(1, &[("a", 5.0), ("cost", 2.0)]),
            done(2, &[("a", 3.0), ("cost", 0.5)]),
            done(3, &[("a", 2.0), ("cost", 0.1)]),
            done(4, &[("a", 4.0)]),
        ];
        let capped = [MetricSpec::objective("a", Goal::Maximize), safety(Goal::Minimize)];
        assert_eq!(optimal_trials(&capped, &trials).iter().map(|t| t.id).collect::<Vec<_>>(), [4], "trial 1 is unsafe; 4 counts as safe");
        let floored = [safety(Goal::Maximize), MetricSpec::objective("a", Goal::Maximize)];
        assert_eq!(optimal_trials(&floored, &trials).iter().map(|t| t.id).collect::<Vec<_>>(), [1], "cost ≥ 1 is safe now");
        let two = [MetricSpec::objective("a", Goal::Maximize), MetricSpec::objective("b", Goal::Maximize), safety(Goal::Minimize)];
        assert!(optimal_trials(&two, &trials).is_empty(), "no trial reports b");
    }

    #[test]
    fn several_metrics_give_the_pareto_front() {
        let metrics = [MetricSpec::objective("acc", Goal::Maximize), MetricSpec::objective("latency", Goal::Minimize)];
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

    /// The sorted sweep finds exactly the front that comparing every pair finds, and a cap keeps
    /// the trials that add the most hypervolume.
    #[test]
    fn the_sweep_equals_all_pairs_and_the_cap_keeps_the_best() {
        use rand::{RngExt, SeedableRng};
        let metrics = [
            MetricSpec::objective("a", Goal::Maximize),
            MetricSpec::objective("b", Goal::Minimize),
            MetricSpec::objective("c", Goal::Maximize),
        ];
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let trials: Vec<Trial> = (1..=300)
            .map(|id| {
                // Coarse values, so ties and duplicates occur.
                let mut v = || (rng.random::<f64>() * 8.0).floor();
                // Conflicting metrics (a large a costs a large b, a large c a small a), so the
                // front is wide.
                let (a, noise, c) = (v(), v(), v());
                done(id, &[("a", a - c), ("b", a + noise / 4.0), ("c", c)])
            })
            .collect();
        let value = |t: &Trial, k: &str| t.final_measurement.as_ref().unwrap().metrics[k];
        let dominates = |x: &Trial, y: &Trial| {
            let ge = value(x, "a") >= value(y, "a") && value(x, "b") <= value(y, "b") && value(x, "c") >= value(y, "c");
            let gt = value(x, "a") > value(y, "a") || value(x, "b") < value(y, "b") || value(x, "c") > value(y, "c");
            ge && gt
        };
        let brute: Vec<i64> = trials.iter().filter(|t| !trials.iter().any(|o| dominates(o, t))).map(|t| t.id).collect();
        let swept: Vec<i64> = optimal_trials(&metrics, &trials).iter().map(|t| t.id).collect();
        assert_eq!(swept, brute);
        let finals: Vec<(i64, &Measurement)> = trials.iter().map(|t| (t.id, t.final_measurement.as_ref().unwrap())).collect();
        let capped = optimal_ids(&metrics, &finals, 3);
        assert_eq!(capped.len(), 3);
        assert!(capped.iter().all(|id| brute.contains(id)));
        // The cap keeps the three that add the most hypervolume to the front.
        let oriented = |t: &Trial| vec![value(t, "a"), -value(t, "b"), value(t, "c")];
        let points: Vec<Vec<f64>> = brute.iter().map(|id| oriented(&trials[*id as usize - 1])).collect();
        let gains = crate::hypervolume::contributions(&points, &crate::hypervolume::reference_point(&points).unwrap());
        let mut sorted = gains.clone();
        sorted.sort_by(|a, b| b.total_cmp(a));
        let kept: Vec<f64> = capped.iter().map(|id| gains[brute.iter().position(|b| b == id).unwrap()]).collect();
        assert!(kept.iter().all(|g| *g >= sorted[2]), "kept {kept:?}, the largest are {:?}", &sorted[..3]);
    }

    /// Trials on the positive part of a sphere in `m` dimensions: every one on the front.
    fn sphere(n: usize, m: usize, seed: u64) -> (Vec<MetricSpec>, Vec<Trial>) {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let metrics: Vec<MetricSpec> = (0..m).map(|k| MetricSpec::objective(&format!("m{k}"), Goal::Maximize)).collect();
        let trials = (1..=n as i64)
            .map(|id| {
                let v: Vec<f64> = (0..m).map(|_| rng.random::<f64>() + 0.01).collect();
                let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
                let values: Vec<(String, f64)> = v.iter().enumerate().map(|(k, x)| (format!("m{k}"), x / norm)).collect();
                done(id, &values.iter().map(|(k, x)| (k.as_str(), *x)).collect::<Vec<_>>())
            })
            .collect();
        (metrics, trials)
    }

    /// Where the exact cut costs too much, the estimated one keeps nearly as much hypervolume
    /// (four metrics: 99 % of what the exact cut keeps), the same trials each time.
    #[test]
    fn an_estimated_cut_keeps_nearly_what_the_exact_one_keeps() {
        let (metrics, trials) = sphere(150, 4, 3);
        let finals: Vec<(i64, &Measurement)> = trials.iter().map(|t| (t.id, t.final_measurement.as_ref().unwrap())).collect();
        let exact = optimal_ids_within(&metrics, &finals, 100, u64::MAX);
        let estimated = optimal_ids_within(&metrics, &finals, 100, 2_000_000);
        assert_eq!(estimated, optimal_ids_within(&metrics, &finals, 100, 2_000_000), "repeatable");
        assert_eq!((exact.len(), estimated.len()), (100, 100));
        let points = |ids: &[i64]| -> Vec<Vec<f64>> {
            ids.iter()
                .map(|id| {
                    let m = &trials[*id as usize - 1].final_measurement.as_ref().unwrap().metrics;
                    (0..4).map(|k| m[&format!("m{k}")]).collect()
                })
                .collect()
        };
        let all = points(&trials.iter().map(|t| t.id).collect::<Vec<_>>());
        let reference = crate::hypervolume::reference_point(&all).unwrap();
        let (hv_exact, hv_estimated) = (
            crate::hypervolume::hypervolume(&points(&exact), &reference),
            crate::hypervolume::hypervolume(&points(&estimated), &reference),
        );
        assert!(hv_estimated >= 0.99 * hv_exact, "estimated cut {hv_estimated}, exact cut {hv_exact}");
    }

    /// A front of 1,500 trials of 20 metrics is cut to the cap within the budget: every kept
    /// trial is on the front.
    #[test]
    fn twenty_metrics_are_cut_within_the_budget() {
        let (metrics, trials) = sphere(1500, 20, 5);
        let finals: Vec<(i64, &Measurement)> = trials.iter().map(|t| (t.id, t.final_measurement.as_ref().unwrap())).collect();
        let kept = optimal_ids_within(&metrics, &finals, 1000, 20_000_000);
        assert_eq!(kept.len(), 1000);
        let first = |id: i64| finals.iter().find(|(i, _)| *i == id).unwrap().1.metrics[&metrics[0].id];
        let goal = metrics[0].goal;
        assert!(kept.windows(2).all(|w| !goal.better(first(w[1]), first(w[0]))), "best first by the first objective");
        assert_eq!(kept.iter().collect::<std::collections::HashSet<_>>().len(), 1000, "no trial twice");
    }

    /// Two metrics: the staircase finds the front that comparing every pair finds (ties and
    /// copies included), and a cap keeps the trials that add the most hypervolume.
    #[test]
    fn two_metrics_sweep_and_cut_by_hypervolume() {
        use rand::{RngExt, SeedableRng};
        let metrics = [MetricSpec::objective("a", Goal::Maximize), MetricSpec::objective("b", Goal::Minimize)];
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let trials: Vec<Trial> = (1..=400)
            .map(|id| {
                let a = (rng.random::<f64>() * 20.0).floor();
                let b = (a * a / 20.0 + rng.random::<f64>() * 3.0).floor();
                done(id, &[("a", a), ("b", b)])
            })
            .collect();
        let value = |t: &Trial, k: &str| t.final_measurement.as_ref().unwrap().metrics[k];
        let dominates = |x: &Trial, y: &Trial| {
            value(x, "a") >= value(y, "a")
                && value(x, "b") <= value(y, "b")
                && (value(x, "a") > value(y, "a") || value(x, "b") < value(y, "b"))
        };
        let brute: Vec<i64> = trials.iter().filter(|t| !trials.iter().any(|o| dominates(o, t))).map(|t| t.id).collect();
        assert_eq!(optimal_trials(&metrics, &trials).iter().map(|t| t.id).collect::<Vec<_>>(), brute);
        let finals: Vec<(i64, &Measurement)> = trials.iter().map(|t| (t.id, t.final_measurement.as_ref().unwrap())).collect();
        let capped = optimal_ids(&metrics, &finals, 4);
        assert_eq!(capped.len(), 4);
        // Four distinct points (the front has copies), those adding the most hypervolume.
        let oriented = |id: &i64| vec![value(&trials[*id as usize - 1], "a"), -value(&trials[*id as usize - 1], "b")];
        let mut distinct: Vec<Vec<f64>> = brute.iter().map(oriented).collect();
        distinct.sort_by(|a, b| lex(a, b));
        distinct.dedup();
        let gains = crate::hypervolume::contributions(&distinct, &crate::hypervolume::reference_point(&distinct).unwrap());
        let mut sorted = gains.clone();
        sorted.sort_by(|a, b| b.total_cmp(a));
        let mut kept: Vec<Vec<f64>> = capped.iter().map(oriented).collect();
        kept.sort_by(|a, b| lex(a, b));
        kept.dedup();
        assert_eq!(kept.len(), 4, "{kept:?}");
        assert!(kept.iter().all(|p| gains[distinct.iter().position(|d| d == p).unwrap()] >= sorted[3]), "{kept:?}");
    }
}
