//! When a whole study stops: Vertex's `StudyStoppingConfig`, decided before each suggestion as
//! the proto's comment says — its rules are read top to bottom and the first whose "if" holds
//! decides; none holding, the study goes on:
//!
//! 1. `minimumRuntimeConstraint` not yet passed → go on;
//! 2. `maximumRuntimeConstraint` passed → stop;
//! 3. fewer than `minNumTrials` COMPLETED trials → go on;
//! 4. `maxNumTrials` trials or more → stop (the next suggestion would exceed it);
//! 5. the objective not improved for `maxNumTrialsNoProgress` completed trials → stop;
//! 6. the objective not improved for `maxDurationNoProgress` → stop.
//!
//! The last two are for single-objective studies only, as the proto warns. A time constraint is
//! a duration since the study's creation or an end time. `shouldStopAsap` makes the early-
//! stopping check of every trial of a stopped study answer "stop". This module decides from
//! counts and times the store aggregates; it reads no trials itself.

use serde::{Deserialize, Serialize};

/// `StudySpec.StudyStoppingConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StudyStoppingConfig {
    /// Interrupt running trials once the study stops (their early-stopping checks say stop).
    #[serde(default)]
    pub should_stop_asap: bool,
    /// Do not stop before this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum_runtime: Option<TimeConstraint>,
    /// Stop after this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum_runtime: Option<TimeConstraint>,
    /// Do not stop with fewer COMPLETED trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_num_trials: Option<i64>,
    /// Stop at this many trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_num_trials: Option<i64>,
    /// Stop when this many trials have completed since the best one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_num_trials_no_progress: Option<i64>,
    /// Stop when the best trial is this many seconds old.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_no_progress_secs: Option<f64>,
}

impl StudyStoppingConfig {
    /// Refuses rules that contradict each other or do not apply to a study of `objectives`
    /// objectives: `(field, reason)`, the field relative to the config. The no-progress rules
    /// are defined for one objective (the proto says so); a minimum above the maximum, of
    /// trials or of runtime in the same form, would never let the maximum decide.
    pub fn check(&self, objectives: usize) -> Result<(), (&'static str, String)> {
        if objectives > 1 {
            for (field, set) in [
                ("maxNumTrialsNoProgress", self.max_num_trials_no_progress.is_some()),
                ("maxDurationNoProgress", self.max_duration_no_progress_secs.is_some()),
            ] {
                if set {
                    return Err((
                        field,
                        format!(
                            "applies to a study of one objective; this one has {objectives} (use maxNumTrials or a runtime constraint)"
                        ),
                    ));
                }
            }
        }
        if let (Some(min), Some(max)) = (self.min_num_trials, self.max_num_trials)
            && min > max
        {
            return Err(("minNumTrials", format!("is {min}, above maxNumTrials ({max})")));
        }
        match (self.minimum_runtime, self.maximum_runtime) {
            (Some(TimeConstraint::MaxDurationSecs(min)), Some(TimeConstraint::MaxDurationSecs(max))) if min > max => {
                Err(("minimumRuntimeConstraint", format!("lasts {min} s, longer than maximumRuntimeConstraint ({max} s)")))
            }
            (Some(TimeConstraint::EndTimeMs(min)), Some(TimeConstraint::EndTimeMs(max))) if min > max => {
                Err(("minimumRuntimeConstraint", "ends after maximumRuntimeConstraint".to_owned()))
            }
            _ => Ok(()),
        }
    }
}

/// `StudyTimeConstraint`: a duration since the study's creation, or a moment.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum TimeConstraint {
    /// Seconds after the study was created.
    MaxDurationSecs(f64),
    /// Milliseconds since the epoch.
    EndTimeMs(i64),
}

impl TimeConstraint {
    fn passed(self, created_ms: i64, now_ms: i64) -> bool {
        match self {
            TimeConstraint::MaxDurationSecs(s) => (now_ms - created_ms) as f64 >= s * 1000.0,
            TimeConstraint::EndTimeMs(t) => now_ms >= t,
        }
    }
}

/// Where a study stands, as the rules need it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Progress {
    /// When the study was created, milliseconds since the epoch.
    pub created_ms: i64,
    /// Now.
    pub now_ms: i64,
    /// Its trials, in any state.
    pub trials: i64,
    /// Its COMPLETED trials (SUCCEEDED or INFEASIBLE).
    pub completed: i64,
    /// The best SUCCEEDED trial by the objective (the first to reach that value): when it
    /// completed, and how many trials have completed after it.
    pub best: Option<Best>,
}

/// The best trial so far.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Best {
    /// When it completed.
    pub end_ms: i64,
    /// Trials completed after it.
    pub completed_since: i64,
}

/// What [`decide`] reads of a study's [`Progress`] for these rules, so a store counts only that.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// The trials and the COMPLETED ones.
    pub counts: bool,
    /// The best trial and what came after it.
    pub best: bool,
}

impl StudyStoppingConfig {
    /// What deciding needs for a study with `single_objective` or not.
    pub fn needs(&self, single_objective: bool) -> Needs {
        Needs {
            counts: self.min_num_trials.is_some() || self.max_num_trials.is_some(),
            best: single_objective && (self.max_num_trials_no_progress.is_some() || self.max_duration_no_progress_secs.is_some()),
        }
    }
}

/// Whether the study stops now, and why (the rule that decided, for `inactiveReason`).
pub fn decide(config: &StudyStoppingConfig, progress: &Progress, single_objective: bool) -> Option<String> {
    let Progress { created_ms, now_ms, trials, completed, best } = *progress;
    if let Some(min) = config.minimum_runtime
        && !min.passed(created_ms, now_ms)
    {
        return None;
    }
    if let Some(max) = config.maximum_runtime
        && max.passed(created_ms, now_ms)
    {
        return Some("studyStoppingConfig.maximumRuntimeConstraint: the study's time is up".to_owned());
    }
    if let Some(min) = config.min_num_trials
        && completed < min
    {
        return None;
    }
    if let Some(max) = config.max_num_trials
        && trials >= max
    {
        return Some(format!("studyStoppingConfig.maxNumTrials: the study has {trials} trials (at most {max})"));
    }
    if single_objective && let Some(best) = best {
        if let Some(n) = config.max_num_trials_no_progress
            && best.completed_since >= n
        {
            return Some(format!(
                "studyStoppingConfig.maxNumTrialsNoProgress: no better trial in the last {} completed",
                best.completed_since
            ));
        }
        if let Some(secs) = config.max_duration_no_progress_secs
            && (now_ms - best.end_ms) as f64 >= secs * 1000.0
        {
            return Some(format!(
                "studyStoppingConfig.maxDurationNoProgress: no better trial for {:.0} s",
                (now_ms - best.end_ms) as f64 / 1000.0
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contradictions_and_rules_that_do_not_apply_are_refused() {
        let ok = StudyStoppingConfig {
            min_num_trials: Some(5),
            max_num_trials: Some(5),
            max_num_trials_no_progress: Some(3),
            ..Default::default()
        };
        assert_eq!(ok.check(1), Ok(()));
        assert_eq!(ok.check(2).unwrap_err().0, "maxNumTrialsNoProgress");
        let stale = StudyStoppingConfig { max_duration_no_progress_secs: Some(60.0), ..Default::default() };
        assert_eq!(stale.check(3).unwrap_err().0, "maxDurationNoProgress");
        let crossed = StudyStoppingConfig { min_num_trials: Some(6), max_num_trials: Some(5), ..Default::default() };
        assert_eq!(crossed.check(1).unwrap_err().0, "minNumTrials");
        let long = StudyStoppingConfig {
            minimum_runtime: Some(TimeConstraint::MaxDurationSecs(7200.0)),
            maximum_runtime: Some(TimeConstraint::MaxDurationSecs(3600.0)),
            ..Default::default()
        };
        assert_eq!(long.check(1).unwrap_err().0, "minimumRuntimeConstraint");
        let mixed = StudyStoppingConfig {
            minimum_runtime: Some(TimeConstraint::EndTimeMs(i64::MAX)),
            maximum_runtime: Some(TimeConstraint::MaxDurationSecs(1.0)),
            ..Default::default()
        };
        assert_eq!(mixed.check(2), Ok(()), "different forms are not compared");
    }

    fn at(now_s: i64, trials: i64, completed: i64, best: Option<(i64, i64)>) -> Progress {
        Progress {
            created_ms: 0,
            now_ms: now_s * 1000,
            trials,
            completed,
            best: best.map(|(end_s, completed_since)| Best { end_ms: end_s * 1000, completed_since }),
        }
    }

    #[test]
    fn the_rules_are_read_top_to_bottom_and_the_first_that_holds_decides() {
        let config = StudyStoppingConfig {
            minimum_runtime: Some(TimeConstraint::MaxDurationSecs(60.0)),
            maximum_runtime: Some(TimeConstraint::MaxDurationSecs(3600.0)),
            min_num_trials: Some(5),
            max_num_trials: Some(20),
            max_num_trials_no_progress: Some(4),
            max_duration_no_progress_secs: Some(600.0),
            ..Default::default()
        };
        // Before the minimum runtime nothing stops it, not even 100 trials.
        assert_eq!(decide(&config, &at(59, 100, 100, Some((1, 99))), true), None);
        // Past the maximum runtime it stops, whatever the trials.
        assert!(decide(&config, &at(3600, 0, 0, None), true).unwrap().contains("maximumRuntimeConstraint"));
        // Fewer than minNumTrials completed: it goes on, even at maxNumTrials.
        assert_eq!(decide(&config, &at(120, 25, 4, Some((100, 3))), true), None);
        assert!(decide(&config, &at(120, 20, 5, Some((100, 0))), true).unwrap().contains("maxNumTrials: the study has 20"));
        assert!(decide(&config, &at(120, 10, 9, Some((100, 4))), true).unwrap().contains("maxNumTrialsNoProgress"));
        assert_eq!(decide(&config, &at(120, 10, 9, Some((100, 3))), true), None);
        assert!(decide(&config, &at(700, 10, 9, Some((100, 0))), true).unwrap().contains("maxDurationNoProgress"));
        assert_eq!(config.needs(true), Needs { counts: true, best: true });
        assert_eq!(config.needs(false), Needs { counts: true, best: false });
        // The no-progress rules are for one objective only, and need a best trial.
        assert_eq!(decide(&config, &at(700, 10, 9, Some((100, 9))), false), None);
        assert_eq!(decide(&config, &at(700, 10, 9, None), true), None);
    }

    #[test]
    fn end_times_and_an_empty_config() {
        let config = StudyStoppingConfig { maximum_runtime: Some(TimeConstraint::EndTimeMs(5_000)), ..Default::default() };
        assert_eq!(decide(&config, &at(4, 0, 0, None), true), None);
        assert!(decide(&config, &at(5, 0, 0, None), true).is_some());
        assert_eq!(decide(&StudyStoppingConfig::default(), &at(1_000_000, 1_000_000, 1_000_000, Some((0, 1_000_000))), true), None);
    }
}
