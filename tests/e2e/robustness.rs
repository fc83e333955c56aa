//! Mutated requests — every leaf of valid bodies replaced by values of other types and
//! extremes — never make the server answer 5xx or fall over.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};

use crate::conditional_study;
use crate::harness::{Server, databases};

fn odd_value(rng: &mut StdRng) -> Value {
    match rng.random_range(0..14) {
        0 => json!(null),
        1 => json!(-1),
        2 => json!(0),
        3 => json!("NaN"),
        4 => json!("-9223372036854775808"),
        5 => json!("9223372036854775807"),
        6 => json!(1e308),
        7 => json!(-1e-320),
        8 => json!(""),
        9 => json!("x y"),
        10 => json!([]),
        11 => json!({}),
        12 => json!(true),
        _ => json!(rng.random::<f64>() * 1e6 - 5e5),
    }
}

/// `v` with one random leaf (or member) replaced.
fn mutate(v: &Value, rng: &mut StdRng) -> Value {
    // Choose a JSON pointer by a random walk, then replace what it points at.
    let mut pointer = String::new();
    let mut node = v;
    loop {
        let descend = rng.random_bool(0.8);
        match node {
            Value::Object(map) if !map.is_empty() && descend => {
                let k = map.keys().nth(rng.random_range(0..map.len())).cloned().unwrap();
                pointer.push_str(&format!("/{}", k.replace('~', "~0").replace('/', "~1")));
                node = &map[&k];
            }
            Value::Array(items) if !items.is_empty() && descend => {
                let i = rng.random_range(0..items.len());
                pointer.push_str(&format!("/{i}"));
                node = &items[i];
            }
            _ => break,
        }
    }
    let mut out = v.clone();
    *out.pointer_mut(&pointer).expect("the pointer was just walked") = odd_value(rng);
    out
}

#[test]
fn mutated_requests_never_get_a_5xx() {
    let db = &databases("mutated_requests")[0];
    let s = Server::start(db);
    let study = s.create_study(conditional_study("target", "GRID_SEARCH"));
    let trial = s.suggest(&study, 1, "w")[0]["id"].as_str().unwrap().to_owned();
    let mut rng = StdRng::seed_from_u64(7);
    let bodies: Vec<(String, Value)> = vec![
        ("/studies".into(), conditional_study("m", "QUASI_RANDOM_SEARCH")),
        (format!("/studies/{study}/trials:suggest"), json!({"suggestionCount": 3, "clientId": "c"})),
        (
            format!("/studies/{study}/trials"),
            json!({"parameters": [{"parameterId": "model", "value": "linear"}, {"parameterId": "lr", "value": 0.1}, {"parameterId": "beta", "value": 0.9}], "finalMeasurement": {"stepCount": "3", "elapsedDuration": "1s", "metrics": [{"metricId": "accuracy", "value": 1}]}}),
        ),
        (
            format!("/studies/{study}/trials/{trial}:addTrialMeasurement"),
            json!({"measurement": {"stepCount": "3", "elapsedDuration": "2.5s", "metrics": [{"metricId": "accuracy", "value": 0.5}]}}),
        ),
        (
            format!("/studies/{study}/trials/{trial}:complete"),
            json!({"finalMeasurement": {"metrics": [{"metricId": "accuracy", "value": 0.5}]}, "trialInfeasible": false}),
        ),
        ("/studies:lookup".into(), json!({"displayName": "target"})),
    ];
    for round in 0..400 {
        let (path, body) = &bodies[round % bodies.len()];
        let mutated = mutate(body, &mut rng);
        let (status, answer) = s.post(path, mutated.clone());
        assert!(!status.is_server_error(), "{path} with {mutated} answered {status}: {answer}");
    }
    for query in ["pageSize=-1", "pageSize=99999999999", "pageToken=zzz", "pageToken=after--5", "pageSize=abc"] {
        let (status, _) = s.get(&format!("/studies/{study}/trials?{query}"));
        assert_eq!(status.as_u16(), 400, "{query}");
    }
    for path in ["/studies/abc", "/studies/-1/trials/1", "/studies/99999999999999999999999", &format!("/studies/{study}/trials/x:complete")]
    {
        assert!(s.get(path).0.is_client_error(), "{path}");
    }
    // Still serving, and the target study is intact.
    assert_eq!(s.ok_get(&format!("/studies/{study}"))["displayName"], "target");
}
