//! `bo-bench replay`: a served study's own trials, from `bo-server export`, through its designer
//! in process — fitted on all completed trials but the last, the last observed (the rank-one
//! update a server's suggest makes after a completion), then a suggestion, timed. What the server
//! computes for a sequential suggest, on the model state the study really has (its trust region,
//! its anchors), which a uniformly random history does not reproduce (docs/journal/benchmarks.md,
//! issue 22).
//!
//! Reads only what such a timing needs: DOUBLE parameters (linear or log scale), one metric, the
//! study's algorithm and `algorithmConfig`. Anything else is refused by name.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use bo_core::designer::designer_for;
use bo_core::{Assignment, Domain, Goal, Observation, Outcome, ParamSpec, ParamValue, Scale, SearchSpace, StudySpec};
use rand::SeedableRng;
use rand::rngs::StdRng;
use serde_json::Value;

/// The timing of one replay.
#[derive(Debug, serde::Serialize)]
pub struct Replayed {
    /// Completed trials read.
    pub trials: usize,
    /// Seconds of the fit on all but the last.
    pub fit_seconds: f64,
    /// Median seconds of observe + suggest.
    pub observe_suggest_seconds: f64,
}

/// Replays the export at `path` (see the module docs), timing `repeats` observe + suggest.
pub fn replay(path: &std::path::Path, repeats: usize) -> Result<Replayed> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let export: Value = serde_json::from_str(&text).context("not a bo-server export (JSON)")?;
    let spec = spec_of(&export["study"]["studySpec"])?;
    let metric = spec.objective().id.clone();
    let history: Vec<Observation> = export["trials"]
        .as_array()
        .context("the export has no trials")?
        .iter()
        .filter(|t| t["state"] == "SUCCEEDED")
        .map(|t| observation(t, &metric))
        .collect::<Result<_>>()?;
    if history.len() < 2 {
        bail!("the study has {} completed trials; a replay needs 2", history.len());
    }
    let designer = designer_for(&spec).map_err(|e| anyhow::anyhow!("{e}"))?;
    let problem = bo_core::Problem { spec, seed: 0, priors: Vec::new() };
    let mut rng = StdRng::seed_from_u64(0);
    let n = history.len();
    let start = Instant::now();
    let fitted = designer.fit(&problem, &history[..n - 1], None, &mut rng)?;
    let fit_seconds = start.elapsed().as_secs_f64();
    let mut times = Vec::with_capacity(repeats);
    for _ in 0..repeats.max(1) {
        let start = Instant::now();
        let model = fitted
            .model
            .conditioning()
            .and_then(|c| c.observe(&history[n - 1..]))
            .context("the model cannot observe a trial without a refit")?;
        model.suggest(&[], 1, &mut rng)?;
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(Replayed { trials: n, fit_seconds, observe_suggest_seconds: times[times.len() / 2] })
}

/// The study spec of an export's `studySpec` (wire format), within the module's limits.
fn spec_of(wire: &Value) -> Result<StudySpec> {
    let metrics = wire["metrics"].as_array().context("studySpec.metrics missing")?;
    let [metric] = metrics.as_slice() else { bail!("replay reads studies of one metric; this one has {}", metrics.len()) };
    let goal = match metric["goal"].as_str() {
        Some("MAXIMIZE") => Goal::Maximize,
        Some("MINIMIZE") => Goal::Minimize,
        other => bail!("metric goal {other:?}"),
    };
    let params = wire["parameters"].as_array().context("studySpec.parameters missing")?;
    let params = params
        .iter()
        .map(|p| {
            let id = p["parameterId"].as_str().context("a parameter without parameterId")?.to_owned();
            let double = p.get("doubleValueSpec").with_context(|| format!("replay reads DOUBLE parameters only; {id} is not one"))?;
            let bound = |k: &str| double[k].as_f64().with_context(|| format!("{id}: doubleValueSpec.{k}"));
            let scale = match p["scaleType"].as_str() {
                None | Some("UNIT_LINEAR_SCALE") | Some("SCALE_TYPE_UNSPECIFIED") => Scale::Linear,
                Some("UNIT_LOG_SCALE") => Scale::Log,
                Some(other) => bail!("{id}: scale {other} is not read by replay"),
            };
            let domain = Domain::Double { min: bound("minValue")?, max: bound("maxValue")? };
            Ok(ParamSpec { id, domain, scale, default: None, children: vec![] })
        })
        .collect::<Result<Vec<_>>>()?;
    let space = SearchSpace::new(params).map_err(|e| anyhow::anyhow!("{e}"))?;
    let algorithm = wire["algorithm"].as_str().unwrap_or("ALGORITHM_UNSPECIFIED");
    let config = wire.get("algorithmConfig").cloned().unwrap_or(Value::Null);
    Ok(StudySpec::new(metric["metricId"].as_str().context("metricId")?, goal, space, algorithm).with_config(config))
}

/// A completed trial of the export as an observation of `metric`.
fn observation(trial: &Value, metric: &str) -> Result<Observation> {
    let assignment = Assignment::new(
        trial["parameters"]
            .as_array()
            .context("a trial without parameters")?
            .iter()
            .map(|p| {
                Ok((p["parameterId"].as_str().context("parameterId")?.into(), ParamValue::Float(p["value"].as_f64().context("a value")?)))
            })
            .collect::<Result<_>>()?,
    );
    let value = trial["finalMeasurement"]["metrics"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["metricId"] == metric))
        .and_then(|m| m["value"].as_f64())
        .with_context(|| format!("trial {} has no final {metric}", trial["id"]))?;
    Ok(Observation { objective_sd: None, assignment, outcome: Outcome::Measured(BTreeMap::from([(metric.to_owned(), value)])) })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An export of `n` completed trials of `f = (x − 0.3)² + y²` over two DOUBLE parameters.
    fn export(n: usize, extra_param: Option<Value>) -> Value {
        let mut params = vec![
            serde_json::json!({"parameterId": "x", "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}}),
            serde_json::json!({"parameterId": "y", "doubleValueSpec": {"minValue": 0.01, "maxValue": 1.0}, "scaleType": "UNIT_LOG_SCALE"}),
        ];
        params.extend(extra_param);
        let trials: Vec<Value> = (0..n)
            .map(|i| {
                let (x, y) = ((i as f64 * 0.37) % 1.0, 0.01 + (i as f64 * 0.61) % 0.99);
                serde_json::json!({"id": (i + 1).to_string(), "state": "SUCCEEDED",
                    "parameters": [{"parameterId": "x", "value": x}, {"parameterId": "y", "value": y}],
                    "finalMeasurement": {"metrics": [{"metricId": "f", "value": (x - 0.3) * (x - 0.3) + y * y}]}})
            })
            .collect();
        serde_json::json!({"study": {"studySpec": {"metrics": [{"metricId": "f", "goal": "MINIMIZE"}], "parameters": params,
            "algorithm": "GP_BANDIT", "algorithmConfig": {"initialDesignSize": 5}}}, "trials": trials})
    }

    fn written(value: &Value, name: &str) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("bo-bench-replay-{}-{name}.json", std::process::id()));
        std::fs::write(&path, value.to_string()).unwrap();
        path
    }

    #[test]
    fn a_study_s_trials_are_fitted_observed_and_suggested_from() {
        let path = written(&export(20, None), "ok");
        let r = replay(&path, 3).unwrap();
        std::fs::remove_file(path).unwrap();
        assert_eq!(r.trials, 20);
        assert!(r.fit_seconds > 0.0 && r.observe_suggest_seconds > 0.0, "{r:?}");
    }

    #[test]
    fn what_it_does_not_read_is_refused_by_name() {
        let categorical = serde_json::json!({"parameterId": "kind", "categoricalValueSpec": {"values": ["a", "b"]}});
        let path = written(&export(20, Some(categorical)), "categorical");
        let err = replay(&path, 1).unwrap_err().to_string();
        std::fs::remove_file(path).unwrap();
        assert!(err.contains("DOUBLE") && err.contains("kind"), "{err}");
    }
}
