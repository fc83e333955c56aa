//! What the server acknowledged survives a crash; concurrent clients never share a trial; the
//! server stops cleanly on SIGTERM.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::json;

use crate::conditional_study;
use crate::harness::{Server, databases};

#[test]
fn everything_acknowledged_survives_a_crash() {
    for db in databases("survives_a_crash") {
        let s = Server::start(&db);
        let study = s.create_study(conditional_study("durable", "QUASI_RANDOM_SEARCH"));
        let trials = s.suggest(&study, 3, "w");
        let t0 = trials[0]["id"].as_str().unwrap().to_owned();
        s.ok_post(
            &format!("/studies/{study}/trials/{t0}:addTrialMeasurement"),
            json!({"measurement": {"stepCount": 5, "metrics": [{"metricId": "accuracy", "value": 0.3}]}}),
        );
        s.complete(&study, &t0, "accuracy", 0.4);
        let before_study = s.ok_get(&format!("/studies/{study}"));
        let before_trials = s.ok_get(&format!("/studies/{study}/trials"));
        let s = s.crash_and_restart();
        assert_eq!(s.ok_get(&format!("/studies/{study}")), before_study);
        assert_eq!(s.ok_get(&format!("/studies/{study}/trials")), before_trials);
        // The client's pending trials are still its own; new ids continue after the old.
        let again = s.suggest(&study, 3, "w");
        let ids: Vec<&str> = again.iter().map(|t| t["id"].as_str().unwrap()).collect();
        assert_eq!(ids, vec!["2", "3"]);
        let other = s.suggest(&study, 1, "v");
        assert_eq!(other[0]["id"], "4");
        let status = s.terminate();
        assert!(status.success(), "SIGTERM should stop bo-server cleanly: {status}");
    }
}

#[test]
fn concurrent_clients_never_share_a_trial() {
    for db in databases("concurrent_clients") {
        let s = Arc::new(Server::start(&db));
        let study = s.create_study(conditional_study("busy", "RANDOM_SEARCH"));
        let clients = 12;
        let rounds = 4;
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let s = s.clone();
                let study = study.clone();
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    for r in 0..rounds {
                        let trials = s.suggest(&study, 2, &format!("client-{c}"));
                        assert_eq!(trials.len(), 2);
                        for t in trials {
                            let id = t["id"].as_str().unwrap().to_owned();
                            s.complete(&study, &id, "accuracy", (c * rounds + r) as f64);
                            mine.push(id);
                        }
                    }
                    mine
                })
            })
            .collect();
        let mut seen = HashSet::new();
        for h in handles {
            for id in h.join().expect("client thread") {
                assert!(seen.insert(id.clone()), "trial {id} was handed to two clients on {}", db.name);
            }
        }
        assert_eq!(seen.len(), clients * rounds * 2);
        let all = s.ok_get(&format!("/studies/{study}/trials?pageSize=1000"));
        let trials = all["trials"].as_array().unwrap();
        assert_eq!(trials.len(), clients * rounds * 2);
        assert!(trials.iter().all(|t| t["state"] == "SUCCEEDED"));
    }
}
