//! Reproducible studies: the same sequential loop — suggest, evaluate, complete — run twice on a
//! fresh database gives the same trials, whatever the timing. The second run pauses at chosen
//! points (so the background refit has landed there, where the first run's suggests raced it);
//! a suggest of a reproducible study waits for the model of its data version either way. Two
//! replicas taking turns give what one server gives.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Database, Server, databases};

/// Branin on a mixed space: a double, an integer and a categorical offset.
fn objective(trial: &Value) -> f64 {
    let value = |id: &str| trial["parameters"].as_array().unwrap().iter().find(|p| p["parameterId"] == id).unwrap()["value"].clone();
    let x = value("x").as_f64().unwrap();
    let y = value("y").as_f64().unwrap();
    let shift = match value("kind").as_str().unwrap() {
        "a" => 0.0,
        "b" => 3.0,
        _ => 7.0,
    };
    let pi = std::f64::consts::PI;
    let b = 5.1 / (4.0 * pi * pi);
    (y - b * x * x + 5.0 / pi * x - 6.0).powi(2) + 10.0 * (1.0 - 1.0 / (8.0 * pi)) * x.cos() + 10.0 + shift
}

fn spec(algorithm: &str, config: Value) -> Value {
    json!({"displayName": "same-every-time", "studySpec": {
        "metrics": [{"metricId": "f", "goal": "MINIMIZE"}],
        "algorithm": algorithm,
        "algorithmConfig": config,
        "parameters": [
            {"parameterId": "x", "doubleValueSpec": {"minValue": -5.0, "maxValue": 10.0}},
            {"parameterId": "y", "integerValueSpec": {"minValue": "0", "maxValue": "15"}},
            {"parameterId": "kind", "categoricalValueSpec": {"values": ["a", "b", "c"]}}]}})
}

/// The parameters of each of `n` trials of a sequential loop on a fresh server; with `pauses`,
/// a pause before every third suggest.
fn run(db: &Database, server_args: &[&str], study: &Value, n: usize, pauses: bool) -> Vec<Value> {
    run_on(&[Server::start_with(db, server_args)], study, n, pauses)
}

/// [`run`] on `replicas` of one database: the k-th trial's suggest and completion sent to
/// replica k mod their number, so each suggest follows a completion another replica took.
fn run_on(replicas: &[Server], study: &Value, n: usize, pauses: bool) -> Vec<Value> {
    let id = replicas[0].create_study(study.clone());
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if pauses && i % 3 == 0 {
            std::thread::sleep(Duration::from_millis(150));
        }
        let replica = &replicas[i % replicas.len()];
        let trial = replica.suggest(&id, 1, "worker").remove(0);
        let value = objective(&trial);
        replica.complete(&id, trial["id"].as_str().unwrap(), "f", value);
        out.push(trial["parameters"].clone());
    }
    out
}

fn assert_same(first: &[Value], second: &[Value], what: &str) {
    for (i, (a, b)) in first.iter().zip(second).enumerate() {
        assert_eq!(a, b, "{what}: trial {} differs between two runs of the same loop", i + 1);
    }
}

#[test]
#[ignore = "slow: `cargo test -- --include-ignored` runs it, as .ci/run does"]
fn the_same_sequential_loop_twice_gives_the_same_trials() {
    let _machine = crate::harness::machine_to_myself();
    for (k, (name, args, study)) in [
        ("GP_BANDIT by its study setting", vec![], spec("GP_BANDIT", json!({"reproducible": true}))),
        ("AUTO by the server default", vec!["--reproducible"], spec("ALGORITHM_UNSPECIFIED", Value::Null)),
    ]
    .into_iter()
    .enumerate()
    {
        let firsts = databases(&format!("reproducible_{k}_a"));
        let seconds = databases(&format!("reproducible_{k}_b"));
        for (first_db, second_db) in firsts.iter().zip(&seconds) {
            let first = run(first_db, &args, &study, 40, false);
            let second = run(second_db, &args, &study, 40, true);
            assert_same(&first, &second, &format!("{name} on {}", first_db.name));
        }
    }
}

/// Two replicas on one Postgres taking turns — each trial suggested and completed on the other
/// replica than the last — give the trials one server gives: whichever replica fits a data
/// version, or takes up the other's stored fit, has the model a lone server has.
#[test]
fn two_replicas_taking_turns_give_the_trials_one_server_gives() {
    let _machine = crate::harness::machine_to_myself();
    let study = spec("GP_BANDIT", json!({"reproducible": true}));
    let pick = |test: &str| databases(test).into_iter().find(|d| d.name == "postgres");
    let (Some(one), Some(two)) = (pick("reproducible_one_server"), pick("reproducible_two_replicas")) else {
        eprintln!("skipped: replicas need Postgres (set BO_TEST_POSTGRES_URL)");
        return;
    };
    let alone = run(&one, &[], &study, 40, false);
    let replicas = [Server::start_with(&two, &[]), Server::start_with(&two, &[])];
    let shared = run_on(&replicas, &study, 40, false);
    assert_same(&alone, &shared, "GP_BANDIT on one server and on two replicas");
    // Both replicas fitted: each refitted after the completions it took, and each suggest
    // followed a completion the other replica took.
    for (k, replica) in replicas.iter().enumerate() {
        let text = reqwest::blocking::get(format!("{}/metrics", replica.base)).unwrap().text().unwrap();
        let fitted: u64 = text
            .lines()
            .find(|l| l.starts_with(r#"bo_refit_duration_seconds_count{result="fitted"}"#))
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or(0);
        assert!(fitted > 0, "replica {k} fitted nothing: the test did not share the work");
    }
}
