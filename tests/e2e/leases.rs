//! The per-study trial lease (`algorithmConfig.trialLease`): a killed worker's trial goes to the
//! next client once the lease runs out; a study's own setting overrides the server's (`"0s"`:
//! never); the designer never sees the key; a bad lease is a 400 that names it.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::harness::{Server, databases, message};

fn study(name: &str, algorithm: &str, config: Value) -> Value {
    json!({"displayName": name, "studySpec": {
        "metrics": [{"metricId": "m", "goal": "MAXIMIZE"}], "algorithm": algorithm, "algorithmConfig": config,
        "parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}]}})
}

#[test]
fn a_study_lease_hands_an_abandoned_trial_to_the_next_client() {
    for db in databases("study_trial_lease") {
        // The server's own lease is long: only the studies' settings act within the test.
        let server = Server::start_with(&db, &["--trial-lease", "3600"]);
        let leased = server.create_study(study("leased", "RANDOM_SEARCH", json!({"trialLease": "1s"})));
        let spec = server.ok_get(&format!("/studies/{leased}"));
        assert_eq!(spec["studySpec"]["algorithmConfig"], json!({"trialLease": "1s"}), "echoed as set");
        // A GP study keeps its designer settings beside the lease.
        let gp = server.create_study(study("gp", "GP_BANDIT", json!({"trialLease": 2.5, "acquisition": "UCB"})));
        let spec = server.ok_get(&format!("/studies/{gp}"));
        assert_eq!(spec["studySpec"]["algorithmConfig"], json!({"acquisition": "UCB", "trialLease": "2.500s"}));
        let never = server.create_study(study("never", "RANDOM_SEARCH", json!({"trialLease": "0s"})));

        let abandoned = server.suggest(&leased, 1, "killed-worker")[0]["id"].clone();
        let kept = server.suggest(&never, 1, "killed-worker")[0]["id"].clone();
        std::thread::sleep(Duration::from_millis(1600));
        let taken = server.suggest(&leased, 1, "next-worker");
        assert_eq!(taken[0]["id"], abandoned, "on {}: the abandoned trial goes to the next client", db.name);
        assert_eq!(taken[0]["clientId"], "next-worker");
        let fresh = server.suggest(&never, 1, "next-worker");
        assert_ne!(fresh[0]["id"], kept, "on {}: \"0s\" never takes a trial back", db.name);
        let gp_trial = server.suggest(&gp, 1, "w");
        assert_eq!(gp_trial.len(), 1);

        // Bad leases: 400, naming the key, and no study made.
        for bad in [json!("soon"), json!(-1), json!("40000000s"), json!(true)] {
            let (status, body) = server.post("/studies", study("bad", "RANDOM_SEARCH", json!({"trialLease": bad})));
            assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
            assert!(message(&body).contains("algorithmConfig.trialLease"), "{}", message(&body));
        }
        let (status, _) = server.post("/studies:lookup", json!({"displayName": "bad"}));
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
}
