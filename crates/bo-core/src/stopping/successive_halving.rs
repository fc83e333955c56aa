//! `successiveHalvingStoppingSpec` (a bo extension): asynchronous successive halving, the
//! promotion rule of ASHA (Li et al., "A System for Massively Parallel Hyperparameter Tuning",
//! MLSys 2020, Algorithm 2) read as a stopping rule, as Ray Tune's `AsyncHyperBandScheduler`
//! reads it.
//!
//! Rungs sit at `r_k = minStepCount · η^k` below `maxStepCount` (η the `reductionFactor`). A
//! trial is judged at the highest rung its latest measurement has reached: its value there (the
//! objective of its first measurement at or past the rung) goes on when it is at least as good as
//! the `1 − 1/η` quantile of the values the study's other trials had at that rung — every trial
//! that reached it, running, stopped or completed (at the last rung, those started before it) —
//! and stops otherwise. With no other trial at the rung it goes on. There is no barrier: a trial
//! is judged against whoever has reached its rung so far, so any number of workers may run at
//! once. A trial past the last rung is never stopped.
//!
//! With `brackets` above 1 the rule is asynchronous Hyperband (Li et al. 2018, Algorithm 1, read
//! asynchronously as in Li et al. 2020, §3.3): bracket `b` starts its rungs `b` rungs higher
//! (`minStepCount · η^(k+b)`), so later brackets stop fewer trials and later. Each trial belongs to
//! one bracket, fixed by its number ([`SuccessiveHalving::bracket_of`]), and is judged only
//! against the trials of its bracket. Trials are spread over brackets as Hyperband spreads
//! configurations — bracket `b` with `s` rungs gets a share `∝ η^s / (s + 1)`, each bracket then
//! spending about the same budget — along the golden-ratio sequence of trial numbers, so any
//! prefix of a study's trials is spread close to those shares.
//!
//! How many go on is the rule's [`Promotion`]. `QUANTILE` (the default) is Ray's: a trial goes
//! on when it is at least as good as the `1 − 1/η` quantile of the *others'* values, so with
//! few trials at a rung most go on. `TOP_K` is ASHA's `top_k(rung, |rung|/η)` (Li et al. 2020,
//! Algorithm 2) as Optuna's `SuccessiveHalvingPruner` reads it without resumption: a trial goes
//! on when it is among the best `max(1, ⌊n/η⌋)` of the `n` values at the rung, its own
//! included — the second trial at a rung goes on only if it beats the first. It stops more
//! trials early, before the rung fills, and so spends fewer epochs on promotions.
//!
//! With `resume` the rule is ASHA with checkpoints, as Li et al. (2020, Algorithm 2) run it:
//! every trial pauses at each rung (it is asked to stop, and completes with its value there),
//! and when a worker asks for work, the best paused trial among the best `⌊n/η⌋` of the `n`
//! trials at the highest rung that has one is handed out again ([`promotable`]) — as a *new*
//! trial with the paused one's parameters and measurements ([`Trial::resumed`]), which its
//! client trains on from the checkpoint it saved. The paused trial stays completed, so nothing
//! a client or a view has read moves backwards; it is superseded ([`Trial::superseded`]): the
//! designers learn the newest trial of a chain only, and a chain counts once at each rung. Only
//! when no rung has a trial to promote does a new configuration start. A resumed trial pauses
//! again only at a rung past the one it resumed at.
//!
//! Unlike Ray's scheduler, which judges a trial once per rung, a trial checked again before it
//! reaches its next rung is judged again, against everyone at the rung by then: the decision
//! depends on the measurements alone, not on when checks happened to come. At the *last* rung
//! a trial is judged only against the trials that started before it (a lower number): a trial
//! that went on there trains to the end unless an earlier one beats it, so a newcomer never
//! stops the leader at the last rung while it trains on, and the earliest trial to reach the
//! last rung always trains in full. Judged again there, the leader was stopped by each better
//! newcomer, and with several workers a run could spend its last rung on trials none of which
//! finished. Lower rungs keep re-judging: on the learning-curve problems with four workers,
//! judging every rung against earlier trials only finished more trials but left the incumbent
//! worse at a quarter of the budget (docs/benchmarks/multi-fidelity.md).
//!
//! Must not do: I/O. A service reads the other trials' values at the rung from its database
//! ([`Check::Rung`](super::Check::Rung)); [`values_at`] does it from trials in memory.

use super::spec::{Promotion, SuccessiveHalving, bracket_by};
use super::{StoppingDecision, position};
use crate::study::MetricSpec;
use crate::trial::Trial;

/// A trial's value at `rung`: the objective of its first measurement (by position, then arrival)
/// at or past it; `None` if it has not reached the rung.
pub fn value_at(objective: &MetricSpec, trial: &Trial, rung: f64, use_elapsed: bool) -> Option<f64> {
    trial
        .measurements
        .iter()
        .filter(|m| position(m, use_elapsed) >= rung)
        .filter_map(|m| m.metrics.get(&objective.id).map(|v| (position(m, use_elapsed), *v)))
        .reduce(|a, b| if b.0 < a.0 { b } else { a })
        .map(|(_, v)| v)
}

/// The values the trials among `others` (all but `except`, and all but those a later trial
/// resumes: [`Trial::superseded`]) had at `rung`, with their numbers.
pub fn values_at(objective: &MetricSpec, others: &[Trial], except: i64, rung: f64, use_elapsed: bool) -> Vec<(i64, f64)> {
    let superseded = Trial::superseded(others);
    others
        .iter()
        .filter(|t| t.id != except && !superseded.contains(&t.id))
        .filter_map(|t| Some((t.id, value_at(objective, t, rung, use_elapsed)?)))
        .collect()
}

/// The paused trial to resume next under [`SuccessiveHalving::resume`] (Li et al. 2020,
/// Algorithm 2's `get_job`): from the highest rung down, the best trial among the best
/// `⌊n/η⌋` of the `n` values at the rung that is paused there; `None` when no rung has one,
/// and a new trial starts.
///
/// `at_rungs` holds each rung with the values every trial that reached it had there (one per
/// chain of resumptions: its newest trial), `paused` each paused trial's number with its last
/// position — a trial stopped before completing whose configuration no later trial has taken
/// up.
pub fn promotable(
    objective: &MetricSpec,
    rule: &SuccessiveHalving,
    at_rungs: &[(f64, Vec<(i64, f64)>)],
    paused: &std::collections::BTreeMap<i64, f64>,
) -> Option<i64> {
    // Larger is better once a minimised objective is negated.
    let sign = if objective.goal.better(1.0, 0.0) { 1.0 } else { -1.0 };
    let rungs = rule.rungs();
    for (i, rung) in rungs.iter().enumerate().rev() {
        let next = rungs.get(i + 1).copied().unwrap_or(rule.max_step_count);
        let Some((_, values)) = at_rungs.iter().find(|(r, _)| r == rung) else { continue };
        let mut values: Vec<(i64, f64)> = values.iter().copied().filter(|(_, v)| v.is_finite()).collect();
        values.sort_by(|a, b| (sign * b.1).total_cmp(&(sign * a.1)).then(a.0.cmp(&b.0)));
        let k = (values.len() as f64 / rule.reduction_factor).floor() as usize;
        let paused_here = |id: &i64| paused.get(id).is_some_and(|at| *at >= *rung && *at < next);
        if let Some((id, _)) = values.into_iter().take(k).find(|(id, _)| paused_here(id)) {
            return Some(id);
        }
    }
    None
}

/// [`promotable`] from trials in memory (a service reads the same in its database): the
/// values at each rung of the trials no later trial resumes, and the paused ones — stopped
/// before completing, succeeded, not resumed — at their last position.
pub fn promotable_among(objective: &MetricSpec, rule: &SuccessiveHalving, trials: &[Trial]) -> Option<i64> {
    let use_elapsed = rule.use_elapsed_duration;
    let at_rungs: Vec<(f64, Vec<(i64, f64)>)> =
        rule.rungs().into_iter().map(|rung| (rung, values_at(objective, trials, 0, rung, use_elapsed))).collect();
    let superseded = Trial::superseded(trials);
    let paused = trials
        .iter()
        .filter(|t| t.is_partial() && t.state == crate::trial::TrialState::Succeeded && !superseded.contains(&t.id))
        .filter_map(|t| Some((t.id, t.measurements.iter().map(|m| position(m, use_elapsed)).reduce(f64::max)?)))
        .collect();
    promotable(objective, rule, &at_rungs, &paused)
}

/// The rule for trial number `trial` whose value at `rung` is `value`, given the other trials'
/// values there (by trial number): stop when it is worse than the cutoff its [`Promotion`] sets
/// among the values of the trials in its bracket (at the last rung, of those that started
/// before it).
pub fn rung_decision(
    objective: &MetricSpec,
    rule: &SuccessiveHalving,
    trial: i64,
    rung: f64,
    value: f64,
    others: Vec<(i64, f64)>,
) -> StoppingDecision {
    let shares = rule.shares();
    let bracket = bracket_by(&shares, trial);
    // At the last rung only earlier trials count: a newcomer never stops the leader there.
    let last = rule.rungs().last().copied().unwrap_or(rung);
    let others: Vec<f64> = others
        .into_iter()
        .filter(|(id, v)| (*id < trial || rung < last) && v.is_finite() && bracket_by(&shares, *id) == bracket)
        .map(|(_, v)| v)
        .collect();
    let within = if rule.brackets > 1 { format!(" of bracket {bracket}") } else { String::new() };
    if others.is_empty() {
        return StoppingDecision::go_on(if rung < last {
            format!("the first trial{within} to reach the rung at {rung}")
        } else {
            format!("no earlier trial{within} has reached the last rung, at {rung}")
        });
    }
    // Larger is better once a minimised objective is negated.
    let sign = if objective.goal.better(1.0, 0.0) { 1.0 } else { -1.0 };
    let n = others.len();
    let (cutoff, among) = match rule.promotion {
        Promotion::Quantile => {
            let keep = 1.0 / rule.reduction_factor;
            let mut oriented: Vec<f64> = others.iter().map(|v| sign * v).collect();
            oriented.sort_by(f64::total_cmp);
            // The value that the best `keep` share of the others reach.
            let cutoff = sign * quantile(&oriented, 1.0 - keep);
            (cutoff, format!("the best {:.0} % of the {n} other trials{within} that reached it", 100.0 * keep))
        }
        Promotion::TopK => {
            let mut oriented: Vec<f64> = others.iter().chain([&value]).map(|v| sign * v).collect();
            oriented.sort_by(|a, b| b.total_cmp(a));
            let k = ((oriented.len() as f64 / rule.reduction_factor).floor() as usize).max(1);
            // The k-th best of all values, the trial's own included.
            let cutoff = sign * oriented[k - 1];
            (cutoff, format!("the last of the best {k} of the {} trials{within} that reached it, this one included", n + 1))
        }
    };
    StoppingDecision {
        should_stop: objective.goal.better(cutoff, value),
        reason: format!("value {value} at the rung at {rung} against {cutoff}, {among}"),
        last_measurement: None,
    }
}

/// The `q` quantile of sorted `v` (non-empty), linear between order statistics (numpy's default).
fn quantile(v: &[f64], q: f64) -> f64 {
    let h = q * (v.len() - 1) as f64;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stopping::curves::testing::trial;
    use crate::study::Goal;
    use crate::trial::TrialState;

    fn rule() -> SuccessiveHalving {
        SuccessiveHalving {
            min_step_count: 1.0,
            max_step_count: 27.0,
            reduction_factor: 3.0,
            use_elapsed_duration: false,
            brackets: 1,
            promotion: Promotion::Quantile,
            resume: false,
        }
    }

    /// `values` as the values of trials 2, 3, …: all in the one bracket of [`rule`].
    fn numbered(values: &[f64]) -> Vec<(i64, f64)> {
        values.iter().enumerate().map(|(i, v)| (i as i64 + 2, *v)).collect()
    }

    #[test]
    fn rungs_grow_by_the_factor_below_the_maximum() {
        assert_eq!(rule().rungs(), vec![1.0, 3.0, 9.0]);
        assert_eq!(rule().rung_at(0.5, 0), None);
        assert_eq!(rule().rung_at(4.0, 0), Some(3.0));
        assert_eq!(rule().rung_at(26.0, 0), Some(9.0));
        assert_eq!(rule().rung_at(27.0, 0), None);
        // A later bracket starts higher.
        assert_eq!(rule().rung_at(2.0, 1), None);
        assert_eq!(rule().rung_at(4.0, 1), Some(3.0));
        assert_eq!(rule().rung_at(8.0, 2), None);
        assert_eq!(rule().rung_at(26.0, 2), Some(9.0));
    }

    #[test]
    fn a_third_goes_on_at_each_rung() {
        let loss = MetricSpec::objective("loss", Goal::Minimize);
        // Others at rung 3: losses 0.1..0.9; the best third are ≤ 0.37 (the 1/3 quantile).
        let others = numbered(&(1..=9).map(|k| k as f64 / 10.0).collect::<Vec<_>>());
        assert!(!rung_decision(&loss, &rule(), 100, 3.0, 0.3, others.clone()).should_stop);
        assert!(rung_decision(&loss, &rule(), 100, 3.0, 0.4, others.clone()).should_stop);
        // Maximised: the best third are ≥ 0.63.
        let acc = MetricSpec::objective("loss", Goal::Maximize);
        assert!(!rung_decision(&acc, &rule(), 100, 3.0, 0.7, others.clone()).should_stop);
        assert!(rung_decision(&acc, &rule(), 100, 3.0, 0.6, others).should_stop);
        // The first at a rung goes on; one other sets the bar.
        assert!(!rung_decision(&loss, &rule(), 100, 3.0, 9.0, vec![]).should_stop);
        assert!(rung_decision(&loss, &rule(), 100, 3.0, 0.5, vec![(2, 0.4)]).should_stop);
    }

    /// ASHA's `top_k`: the best `⌊n/η⌋` of all `n` at the rung (at least one) go on, so the
    /// second trial goes on only if it beats the first.
    #[test]
    fn top_k_keeps_the_best_share_of_all_values_at_the_rung() {
        let top = SuccessiveHalving { promotion: Promotion::TopK, ..rule() };
        let loss = MetricSpec::objective("loss", Goal::Minimize);
        assert!(!rung_decision(&loss, &top, 100, 3.0, 9.0, vec![]).should_stop);
        assert!(rung_decision(&loss, &top, 100, 3.0, 0.5, vec![(2, 0.4)]).should_stop);
        assert!(!rung_decision(&loss, &top, 100, 3.0, 0.4, vec![(2, 0.4)]).should_stop, "a tie goes on");
        // Where the quantile rule lets a trial between two others go on (0.25 beats their 1/3
        // quantile, 0.267), top-k stops it: it is not the best of three.
        assert!(!rung_decision(&loss, &rule(), 100, 3.0, 0.25, numbered(&[0.2, 0.4])).should_stop);
        assert!(rung_decision(&loss, &top, 100, 3.0, 0.25, numbered(&[0.2, 0.4])).should_stop);
        // 8 others and itself: the best 3 of 9 go on.
        let others = numbered(&[0.1, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]);
        assert!(!rung_decision(&loss, &top, 100, 3.0, 0.3, others.clone()).should_stop);
        let d = rung_decision(&loss, &top, 100, 3.0, 0.45, others.clone());
        assert!(d.should_stop && d.reason.contains("best 3 of the 9"), "{}", d.reason);
        // Maximised: the largest are the best.
        let acc = MetricSpec::objective("acc", Goal::Maximize);
        assert!(!rung_decision(&acc, &top, 100, 3.0, 0.85, others.clone()).should_stop);
        assert!(rung_decision(&acc, &top, 100, 3.0, 0.65, others).should_stop);
    }

    /// Hyperband's brackets: shares as Li et al. (2018) spread configurations, every prefix of
    /// trial numbers close to them, and a trial judged only within its bracket.
    #[test]
    fn brackets_share_the_trials_as_hyperband_and_judge_within() {
        let hyperband = SuccessiveHalving { brackets: 3, ..rule() };
        // Rungs 1, 3, 9: brackets of 3, 2 and 1 rungs get 27/4, 9/3 and 3/2 of the trials.
        let shares = hyperband.shares();
        let expected = [27.0 / 4.0, 3.0, 1.5].map(|w| w / 11.25);
        for (s, e) in shares.iter().zip(expected) {
            assert!((s - e).abs() < 1e-12, "{shares:?}");
        }
        for n in [20_i64, 100, 1000] {
            let mut counts = [0usize; 3];
            for id in 1..=n {
                counts[hyperband.bracket_of(id) as usize] += 1;
            }
            for (c, e) in counts.iter().zip(expected) {
                assert!((*c as f64 / n as f64 - e).abs() < 2.5 / n as f64 + 0.01, "{n} trials: {counts:?}");
            }
        }
        assert!((1..100).all(|id| rule().bracket_of(id) == 0), "one bracket");
        // A trial is judged only against its own bracket's trials at the rung.
        let loss = MetricSpec::objective("loss", Goal::Minimize);
        let (mine, other): (Vec<i64>, Vec<i64>) = (1..40).partition(|id| hyperband.bracket_of(*id) == hyperband.bracket_of(40));
        let others: Vec<(i64, f64)> = mine.iter().map(|id| (*id, 0.9)).chain(other.iter().map(|id| (*id, 0.1))).collect();
        let d = rung_decision(&loss, &hyperband, 40, 3.0, 0.5, others);
        assert!(!d.should_stop, "better than every trial of its bracket: {}", d.reason);
        assert!(d.reason.contains("bracket"), "{}", d.reason);
    }

    /// At the last rung a trial is judged against those that started before it: a newcomer
    /// that beats the leader there does not stop it, so the leader trains to the end. Below it,
    /// everyone at the rung counts.
    #[test]
    fn at_the_last_rung_a_later_trial_never_stops_an_earlier_one() {
        let top = SuccessiveHalving { promotion: Promotion::TopK, ..rule() };
        let loss = MetricSpec::objective("loss", Goal::Minimize);
        // Trial 5 went on at the last rung (9), the first there; trials 6 and 7 beat it since.
        let d = rung_decision(&loss, &top, 5, 9.0, 0.5, vec![(6, 0.2), (7, 0.1)]);
        assert!(!d.should_stop && d.reason.contains("no earlier trial"), "{}", d.reason);
        // Trial 7 is judged against 5 and 6 (and goes on, the best of three); a worse trial 8
        // against all three.
        assert!(!rung_decision(&loss, &top, 7, 9.0, 0.1, vec![(5, 0.5), (6, 0.2), (8, 0.3)]).should_stop);
        assert!(rung_decision(&loss, &top, 8, 9.0, 0.3, vec![(5, 0.5), (6, 0.2), (7, 0.1)]).should_stop);
        // An earlier trial that reaches the rung late counts, as it would have had it been
        // faster.
        assert!(rung_decision(&loss, &top, 6, 9.0, 0.2, vec![(2, 0.05)]).should_stop);
        // At a lower rung the leader is judged again against everyone there.
        assert!(rung_decision(&loss, &top, 5, 3.0, 0.5, vec![(6, 0.2), (7, 0.1)]).should_stop);
    }

    #[test]
    fn a_trial_is_judged_at_the_first_measurement_past_its_highest_rung() {
        let loss = MetricSpec::objective("acc", Goal::Minimize);
        let t = trial(1, TrialState::Active, &[(1, 0.9), (2, 0.8), (4, 0.5), (5, 0.1)]);
        assert_eq!(value_at(&loss, &t, 3.0, false), Some(0.5));
        assert_eq!(value_at(&loss, &t, 9.0, false), None);
        let others = vec![t.clone(), trial(2, TrialState::Succeeded, &[(3, 0.2)]), trial(3, TrialState::Active, &[(1, 0.1)])];
        assert_eq!(values_at(&loss, &others, 1, 3.0, false), vec![(2, 0.2)]);
    }

    /// ASHA with checkpoints: the best third at the highest rung that has one is resumed; a
    /// trial already resumed, running or gone further counts once, and none goes on while fewer
    /// than three reached a rung.
    #[test]
    fn the_best_paused_trial_of_the_highest_promotable_rung_is_resumed() {
        let rule = SuccessiveHalving { max_step_count: 50.0, promotion: Promotion::TopK, resume: true, ..rule() };
        assert_eq!(rule.rungs(), vec![1.0, 3.0, 9.0, 27.0]);
        let acc = MetricSpec::objective("acc", Goal::Maximize);
        let paused = |id: i64, curve: &[f64]| {
            let points: Vec<(i64, f64)> = curve.iter().enumerate().map(|(i, v)| (i as i64 + 1, *v)).collect();
            let mut t = trial(id, TrialState::Succeeded, &points);
            t.stop_time_ms = Some(1);
            t
        };
        // Two paused at rung 1: ⌊2/3⌋ = 0 go on.
        let mut trials = vec![paused(1, &[0.5]), paused(2, &[0.7])];
        assert_eq!(promotable_among(&acc, &rule, &trials), None);
        // Three: the best, 0.7, goes on.
        trials.push(paused(3, &[0.6]));
        assert_eq!(promotable_among(&acc, &rule, &trials), Some(2));
        // Resumed by trial 4, still running: trial 2 is superseded and the chain counts once
        // at rung 1, so no other goes on there.
        let mut next = trial(4, TrialState::Active, &[(1, 0.7), (2, 0.72)]);
        next.resumed = Some(crate::trial::Resumed { from: 2, at: 1.0 });
        trials.push(next);
        assert_eq!(promotable_among(&acc, &rule, &trials), None);
        // Three at rung 3, two of them paused there: the highest rung's best paused trial first.
        trials[3] = paused(4, &[0.7, 0.72, 0.74]);
        trials[3].resumed = Some(crate::trial::Resumed { from: 2, at: 1.0 });
        trials.push(paused(5, &[0.8, 0.85, 0.9]));
        trials.push(paused(6, &[0.75, 0.8, 0.8]));
        trials.extend([0.1, 0.2, 0.3, 0.4].into_iter().zip(7..).map(|(v, id)| paused(id, &[v])));
        assert_eq!(promotable_among(&acc, &rule, &trials), Some(5), "0.9 is the best third of rung 3");
        // A trial trained to its end is not paused, and a NaN is never among the best.
        trials[4].stop_time_ms = None;
        trials[5].measurements[2].metrics.insert("acc".into(), f64::NAN);
        assert_ne!(promotable_among(&acc, &rule, &trials), Some(5));
        assert_ne!(promotable_among(&acc, &rule, &trials), Some(6));
    }

    #[test]
    fn settings_are_checked_and_name_the_field() {
        let bad = |f: fn(&mut SuccessiveHalving)| {
            let mut r = rule();
            f(&mut r);
            r.check("studySpec.successiveHalvingStoppingSpec").unwrap_err().to_string()
        };
        assert!(bad(|r| r.min_step_count = 0.0).contains("minStepCount"));
        assert!(bad(|r| r.max_step_count = 1.0).contains("maxStepCount"));
        assert!(bad(|r| r.reduction_factor = 1.0).contains("reductionFactor"));
        assert!(bad(|r| r.reduction_factor = f64::NAN).contains("reductionFactor"));
        assert!(bad(|r| (r.max_step_count, r.reduction_factor) = (1e30, 1.5)).contains("rungs"));
        assert!(bad(|r| r.brackets = 0).contains("brackets"));
        assert!(bad(|r| r.brackets = 4).contains("from 1 to 3"));
        assert!(bad(|r| (r.resume, r.promotion) = (true, Promotion::Quantile)).contains("resume"));
        assert!(bad(|r| (r.resume, r.promotion, r.brackets) = (true, Promotion::TopK, 2)).contains("brackets must be 1"));
        assert!(rule().check("x").is_ok());
        assert!(SuccessiveHalving { resume: true, promotion: Promotion::TopK, ..rule() }.check("x").is_ok());
    }
}
