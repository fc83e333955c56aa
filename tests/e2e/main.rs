//! End-to-end tests: the real `bo-server` binary, driven over HTTP on SQLite and Postgres.

mod access;
mod add_tree;
mod chaos;
mod durability;
mod gp;
mod harness;
mod high_dim;
mod hostile;
mod leases;
mod open_space;
mod outage;
mod pruning;
mod replicas;
mod reproducible;
mod restarts;
mod robustness;
mod studies;
mod transfer;

use serde_json::{Value, json};

/// A conditional study three levels deep: model → conv_layers (INTEGER parent) → pool (DISCRETE
/// parent) → kernel_scale, plus a log-scaled learning rate.
pub fn conditional_study(name: &str, algorithm: &str) -> Value {
    json!({
        "displayName": name,
        "studySpec": {
            "metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
            "algorithm": algorithm,
            "parameters": [
                {"parameterId": "model", "categoricalValueSpec": {"values": ["conv", "mlp", "linear"]},
                 "conditionalParameterSpecs": [
                    {"parentCategoricalValues": {"values": ["conv"]},
                     "parameterSpec": {"parameterId": "conv_layers", "integerValueSpec": {"minValue": "1", "maxValue": "4"},
                        "conditionalParameterSpecs": [
                            {"parentIntValues": {"values": ["2", "3"]},
                             "parameterSpec": {"parameterId": "pool", "discreteValueSpec": {"values": [1, 2, 4]},
                                "conditionalParameterSpecs": [
                                    {"parentDiscreteValues": {"values": [2]},
                                     "parameterSpec": {"parameterId": "kernel_scale", "doubleValueSpec": {"minValue": 0.1, "maxValue": 10},
                                                       "scaleType": "UNIT_LOG_SCALE"}}]}}]}},
                    {"parentCategoricalValues": {"values": ["mlp"]},
                     "parameterSpec": {"parameterId": "hidden", "integerValueSpec": {"minValue": "8", "maxValue": "512"},
                                       "scaleType": "UNIT_LOG_SCALE"}}]},
                {"parameterId": "lr", "doubleValueSpec": {"minValue": 1e-4, "maxValue": 1.0}, "scaleType": "UNIT_LOG_SCALE"},
                {"parameterId": "beta", "doubleValueSpec": {"minValue": 0.5, "maxValue": 0.999}, "scaleType": "UNIT_REVERSE_LOG_SCALE"}
            ]
        }
    })
}

/// Checks a wire trial's parameters against the study's space: exactly the active parameters,
/// each feasible.
pub fn assert_feasible(server: &harness::Server, study: &str, trial: &Value) {
    let study_json = server.ok_get(&format!("/studies/{study}"));
    let wire: bo_server::wire::study::StudyW = serde_json::from_value(study_json).expect("study parses");
    let (spec, _) = wire.study_spec.into_domain(&bo_core::Limits::default()).expect("stored spec is valid");
    let params: Vec<bo_server::wire::trial::ParameterW> = serde_json::from_value(trial["parameters"].clone()).expect("parameters parse");
    bo_server::wire::trial::assignment_from_wire(params, &spec).unwrap_or_else(|e| panic!("infeasible trial {trial}: {e}"));
}
