//! Early stopping answered with each measurement (bo extensions of `:addTrialMeasurement`:
//! `measurements`, `checkEarlyStopping`): the rule's decision and the median rule's thresholds
//! at the next positions, which decide at a later step exactly as asking the server then would.

use serde_json::{Value, json};

use crate::harness::{Server, databases};

fn study(name: &str, median_of: &str) -> Value {
    json!({
        "displayName": name,
        "studySpec": {
            "metrics": [{"metricId": "acc", "goal": "MAXIMIZE"}],
            "algorithm": "RANDOM_SEARCH",
            "medianAutomatedStoppingSpec": {"minCompletedTrials": 2, "minStepCount": 2, "medianOf": median_of},
            "parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}]
        }
    })
}

fn measurements(values: &[(i64, f64)]) -> Value {
    json!(values.iter().map(|(s, v)| json!({"stepCount": s, "metrics": [{"metricId": "acc", "value": v}]})).collect::<Vec<_>>())
}

/// What a client decides at `step` with `best` from an answer: the threshold of the last listed
/// position at or before it (of `step` itself when they are pointwise; none past
/// `thresholdsThrough`), the rule's warm-up applied.
fn local(answer: &Value, step: f64, best: f64) -> bool {
    if step < 2.0 {
        return false;
    }
    if answer["thresholdsThrough"].as_f64().is_some_and(|through| step > through) {
        return false;
    }
    let pointwise = answer["thresholdsPointwise"] == true;
    let t = answer["medianThresholds"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| if pointwise { t["position"].as_f64() == Some(step) } else { t["position"].as_f64().unwrap() <= step })
        .next_back();
    t.and_then(|t| t["value"].as_f64()).is_some_and(|median| best < median)
}

/// Three completed curves at steps 1..8 (one skips odd steps), each sent in one request: how
/// many measurements each request sent, and the trial it answered.
fn three_completed_curves(s: &Server, id: &str) -> Vec<(usize, Value)> {
    [0.10, 0.08, 0.06]
        .into_iter()
        .enumerate()
        .map(|(k, slope)| {
            let t = s.suggest(id, 1, &format!("done{k}")).remove(0);
            let tid = t["id"].as_str().unwrap().to_owned();
            let curve: Vec<(i64, f64)> = (1..=8).filter(|s| k != 2 || s % 2 == 0).map(|s| (s, slope * s as f64)).collect();
            let back = s.ok_post(&format!("/studies/{id}/trials/{tid}:addTrialMeasurement"), json!({"measurements": measurements(&curve)}));
            s.ok_post(&format!("/studies/{id}/trials/{tid}:complete"), json!({}));
            (curve.len(), back)
        })
        .collect()
}

#[test]
fn measurements_answer_with_the_rule_and_its_thresholds() {
    for db in databases("measurements_answer_with_the_rule_and_its_thresholds") {
        let s = Server::start(&db);
        let id = s.create_study(study("thresholds", "RUNNING_AVERAGE"));
        for (sent, back) in three_completed_curves(&s, &id) {
            assert_eq!(back["measurements"].as_array().unwrap().len(), sent, "all appended, in order");
            assert!(back.get("earlyStopping").is_none(), "only when asked");
        }
        let t = s.suggest(&id, 1, "running").remove(0);
        let tid = t["id"].as_str().unwrap().to_owned();
        let add = |step: i64, v: f64, check: bool| {
            s.ok_post(
                &format!("/studies/{id}/trials/{tid}:addTrialMeasurement"),
                json!({"measurement": {"stepCount": step, "metrics": [{"metricId": "acc", "value": v}]}, "checkEarlyStopping": check}),
            )
        };
        let first = add(1, 0.05, true);
        let answer = &first["earlyStopping"];
        assert_eq!(answer["shouldStop"], false, "before minStepCount: {first}");
        let positions: Vec<f64> = answer["medianThresholds"].as_array().unwrap().iter().map(|t| t["position"].as_f64().unwrap()).collect();
        assert_eq!(positions, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], "{answer}");
        assert!(answer.get("thresholdsThrough").is_none(), "every position is listed");
        // At step 1 only two trials had measured (the third starts at 2): the median of their
        // running averages 0.10 and 0.08.
        let at1 = answer["medianThresholds"][0]["value"].as_f64().unwrap();
        assert!((at1 - 0.09).abs() < 1e-12, "{answer}");
        // The local decision at each later step is the server's decision asked then.
        // A curve that flattens: it goes on while it keeps up, and stops once the others' running
        // averages pass it.
        let mut best: f64 = 0.05;
        let mut stopped_at = None;
        for step in 2..=8 {
            let v = (0.07 * step as f64).min(0.2);
            best = best.max(v);
            let decided_locally = local(answer, step as f64, best);
            add(step, v, false);
            let server = s.stops(&id, &tid);
            assert_eq!(decided_locally, server, "{}: step {step}, best {best}: {answer}", db.name);
            if server {
                let t = s.ok_get(&format!("/studies/{id}/trials/{tid}"));
                assert_eq!(t["state"], "STOPPING");
                stopped_at = Some(step);
                break;
            }
        }
        assert_eq!(stopped_at, Some(5), "it went on while it kept up, then stopped");
        // A checked measurement says when the trial should stop, and leaves the stopping to the
        // client (whose loop may have run on meanwhile).
        let t = s.suggest(&id, 1, "bad").remove(0);
        let bad = t["id"].as_str().unwrap().to_owned();
        let answer = s.ok_post(
            &format!("/studies/{id}/trials/{bad}:addTrialMeasurement"),
            json!({"measurements": measurements(&[(1, 0.0), (2, 0.0), (3, 0.0)]), "checkEarlyStopping": true}),
        );
        assert_eq!(answer["earlyStopping"]["shouldStop"], true, "{answer}");
        assert_eq!(answer["state"], "ACTIVE");
        assert!(answer.get("stopTime").is_none(), "{answer}");
        let (status, body) = s.post(
            &format!("/studies/{id}/trials/{bad}:addTrialMeasurement"),
            json!({"measurement": {"metrics": [{"metricId": "acc", "value": 1}]}, "measurements": measurements(&[(4, 0.0)])}),
        );
        assert_eq!(status, reqwest::StatusCode::BAD_REQUEST, "{body}");
    }
}

/// Optuna's comparison (`medianOf: VALUE_AT_POSITION`): the thresholds are the completed trials'
/// values at each step, pointwise, and decide locally as the server does; the bar is higher than
/// the running averages', so the same curve stops earlier.
#[test]
fn the_value_at_each_step_decides_as_optuna_does() {
    for db in databases("the_value_at_each_step_decides_as_optuna_does") {
        let s = Server::start(&db);
        let id = s.create_study(study("optuna-median", "VALUE_AT_POSITION"));
        three_completed_curves(&s, &id);
        let t = s.suggest(&id, 1, "running").remove(0);
        let tid = t["id"].as_str().unwrap().to_owned();
        let first = s.ok_post(
            &format!("/studies/{id}/trials/{tid}:addTrialMeasurement"),
            json!({"measurement": {"stepCount": 1, "metrics": [{"metricId": "acc", "value": 0.05}]}, "checkEarlyStopping": true}),
        );
        let answer = &first["earlyStopping"];
        assert_eq!(answer["thresholdsPointwise"], true, "{answer}");
        // At step 4 the values are 0.4, 0.32 and 0.24: median 0.32 (the running averages' was 0.2).
        let at4 = answer["medianThresholds"].as_array().unwrap().iter().find(|t| t["position"] == 4.0).unwrap();
        assert!((at4["value"].as_f64().unwrap() - 0.32).abs() < 1e-12, "{answer}");
        let mut best: f64 = 0.05;
        let mut stopped_at = None;
        for step in 2..=8 {
            let v = (0.07 * step as f64).min(0.2);
            best = best.max(v);
            let decided_locally = local(answer, step as f64, best);
            s.ok_post(
                &format!("/studies/{id}/trials/{tid}:addTrialMeasurement"),
                json!({"measurement": {"stepCount": step, "metrics": [{"metricId": "acc", "value": v}]}}),
            );
            let server = s.stops(&id, &tid);
            assert_eq!(decided_locally, server, "{}: step {step}, best {best}: {answer}", db.name);
            if server {
                stopped_at = Some(step);
                break;
            }
        }
        assert_eq!(
            stopped_at,
            Some(2),
            "at the values themselves (0.2, 0.16, 0.12 at step 2) the curve stops at once, where the running averages let it go on to 5"
        );
    }
}
