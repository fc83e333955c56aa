//! Round trips of every wire resource: Vertex JSON in, bo-core's types, and the same JSON out
//! (output-only fields as the server writes them), plus snapshots of the shapes bo writes alone
//! (operations). A change of wire format shows here first.

use std::collections::BTreeMap;

use bo_core::{Assignment, Limits, Measurement, ParamValue, StudySpec, Trial, TrialState};
use bo_store::StudySettings;
use serde_json::{Value, json};

use super::measurement::{MeasurementW, measurement_from_wire};
use super::operation::{StatusW, early_stopping_operation, failed_suggest_operation, pending_suggest_operation, suggest_operation};
use super::study::{StudySpecW, StudyStateW};
use super::trial::{ParameterW, TrialW, assignment_from_wire};

/// A study spec using every part of the format, as the server writes it (a linear scale is
/// written out for INTEGER and DISCRETE parameters): a parameter of each type and scale, a tree
/// three levels deep under CATEGORICAL, INTEGER and DISCRETE parents, defaults, two metrics,
/// the stopping rule, noise, measurement selection and a trial lease in `algorithmConfig`.
fn full_spec() -> Value {
    json!({
        "metrics": [{"metricId": "loss", "goal": "MINIMIZE"}, {"metricId": "acc", "goal": "MAXIMIZE"}],
        "parameters": [
            {"parameterId": "lr", "doubleValueSpec": {"minValue": 1e-05, "maxValue": 0.1, "defaultValue": 0.001}, "scaleType": "UNIT_LOG_SCALE"},
            {"parameterId": "beta", "doubleValueSpec": {"minValue": 0.5, "maxValue": 0.999}, "scaleType": "UNIT_REVERSE_LOG_SCALE"},
            {"parameterId": "batch", "discreteValueSpec": {"values": [16.0, 32.0, 64.0]}, "scaleType": "UNIT_LINEAR_SCALE"},
            {
                "parameterId": "model",
                "categoricalValueSpec": {"values": ["conv", "mlp"], "defaultValue": "mlp"},
                "conditionalParameterSpecs": [
                    {
                        "parameterSpec": {
                            "parameterId": "layers",
                            "integerValueSpec": {"minValue": "1", "maxValue": "4"},
                            "scaleType": "UNIT_LINEAR_SCALE",
                            "conditionalParameterSpecs": [{
                                "parameterSpec": {
                                    "parameterId": "pool",
                                    "discreteValueSpec": {"values": [1.0, 2.0, 4.0]},
                                    "scaleType": "UNIT_LINEAR_SCALE",
                                    "conditionalParameterSpecs": [{
                                        "parameterSpec": {"parameterId": "scale", "doubleValueSpec": {"minValue": 0.1, "maxValue": 10.0}, "scaleType": "UNIT_LOG_SCALE"},
                                        "parentDiscreteValues": {"values": [2.0]}
                                    }]
                                },
                                "parentIntValues": {"values": ["2", "3"]}
                            }]
                        },
                        "parentCategoricalValues": {"values": ["conv"]}
                    },
                    {
                        "parameterSpec": {"parameterId": "hidden", "integerValueSpec": {"minValue": "8", "maxValue": "512"}, "scaleType": "UNIT_LOG_SCALE"},
                        "parentCategoricalValues": {"values": ["mlp"]}
                    }
                ]
            }
        ],
        "algorithm": "GP_BANDIT",
        "algorithmConfig": {"numCandidates": 64, "trialLease": "600s", "reproducible": true, "seed": 7, "expectedNumTrials": 50},
        "observationNoise": "HIGH",
        "measurementSelectionType": "BEST_MEASUREMENT",
        "medianAutomatedStoppingSpec": {"useElapsedDuration": true}
    })
}

/// `reproducible` must be a boolean; the refusal names the field.
#[test]
fn reproducible_is_a_boolean() {
    let mut spec = full_spec();
    spec["algorithmConfig"]["reproducible"] = json!("yes");
    let wire: StudySpecW = serde_json::from_value(spec).unwrap();
    let e = wire.into_domain(&Limits::default()).unwrap_err();
    assert_eq!(e.path, "studySpec.algorithmConfig.reproducible", "{e}");
}

/// `expectedNumTrials` is a positive integer within `maxNumTrials`'s bound; the refusal names the
/// field and the range.
#[test]
fn expected_trials_is_a_positive_count() {
    for bad in [json!(0), json!(-3), json!(2.5), json!("50"), json!(3_000_000_000_u64)] {
        let mut spec = full_spec();
        spec["algorithmConfig"]["expectedNumTrials"] = bad.clone();
        let wire: StudySpecW = serde_json::from_value(spec).unwrap();
        let e = wire.into_domain(&Limits::default()).unwrap_err();
        assert_eq!(e.path, "studySpec.algorithmConfig.expectedNumTrials", "{bad}: {e}");
        assert!(e.to_string().contains("from 1 to 2147483647"), "{e}");
    }
}

fn domain(spec: Value) -> (StudySpec, StudySettings) {
    let wire: StudySpecW = serde_json::from_value(spec).expect("parses");
    wire.into_domain(&Limits::default()).expect("a valid spec")
}

/// The wire JSON of a domain spec and its settings.
fn back((spec, settings): &(StudySpec, StudySettings)) -> Value {
    serde_json::to_value(StudySpecW::from_domain(spec, settings)).unwrap()
}

#[test]
fn a_study_spec_round_trips_through_the_domain() {
    let requested = domain(full_spec());
    let (spec, settings) = &requested;
    assert_eq!(*settings, StudySettings { trial_lease_secs: Some(600.0), reproducible: Some(true), seed: Some(7) });
    assert_eq!(spec.algorithm_config, json!({"numCandidates": 64}), "the lease and the mode are the service's, not the designer's");
    assert_eq!(spec.expected_trials, Some(50), "the expected number of trials is the spec's");
    let out = back(&requested);
    assert_eq!(out, full_spec(), "the same JSON back");
    assert_eq!(domain(out), requested);
}

/// Transfer learning: named priors are lifted out of `algorithmConfig` (the designer never sees
/// them) and put back; `priorStudyNames` is output only; `disableTransferLearning` round-trips.
#[test]
fn transfer_learning_round_trips_and_prior_names_are_output_only() {
    let mut named = full_spec();
    named["algorithmConfig"]["priorStudies"] = json!(["projects/p/locations/l/studies/1", "projects/p/locations/l/studies/2"]);
    named["transferLearningConfig"] = json!({"priorStudyNames": ["projects/p/locations/l/studies/1", "projects/p/locations/l/studies/2"]});
    let requested = domain(named.clone());
    let spec = &requested.0;
    assert_eq!(spec.algorithm_config, json!({"numCandidates": 64}));
    assert!(spec.transfer.explicit && !spec.transfer.disabled);
    assert_eq!(spec.transfer.priors.len(), 2);
    assert_eq!(back(&requested), named);

    let mut chosen = full_spec();
    chosen["transferLearningConfig"] = json!({"priorStudyNames": ["projects/p/locations/l/studies/9"]});
    assert_eq!(domain(chosen).0.transfer, bo_core::Transfer::default(), "output only: ignored in a request");
    let mut disabled = full_spec();
    disabled["transferLearningConfig"] = json!({"disableTransferLearning": true});
    let requested = domain(disabled.clone());
    assert!(requested.0.transfer.disabled);
    assert_eq!(back(&requested), disabled);
}

#[test]
fn enums_and_int64_are_read_in_every_proto3_form_and_written_canonically() {
    let mut spec = full_spec();
    spec["metrics"][0]["goal"] = json!(2);
    spec["observationNoise"] = json!(2);
    spec["parameters"][3]["conditionalParameterSpecs"][1]["parameterSpec"]["integerValueSpec"] = json!({"minValue": 8, "maxValue": 512});
    let out = back(&domain(spec));
    assert_eq!(out, full_spec());
}

/// Each automated stopping rule round-trips; v1beta1's `convexStopConfig` is read as
/// `convexAutomatedStoppingSpec` and echoed as that; two rules, an unsupported flag or a
/// learning rate that is not a DOUBLE parameter are refused naming the field.
#[test]
fn every_stopping_rule_round_trips_and_the_convex_alias_is_read() {
    let with = |rule: &str, value: Value| {
        let mut spec = full_spec();
        spec.as_object_mut().unwrap().remove("medianAutomatedStoppingSpec");
        spec[rule] = value;
        spec
    };
    let convex = json!({"maxStepCount": "1000", "minStepCount": "100", "minMeasurementCount": "4",
        "learningRateParameterName": "lr", "useElapsedDuration": true});
    for (rule, value) in [("decayCurveStoppingSpec", json!({"useElapsedDuration": true})), ("convexAutomatedStoppingSpec", convex.clone())]
    {
        let out = back(&domain(with(rule, value.clone())));
        assert_eq!(out, with(rule, value), "{rule}");
    }
    let alias = with(
        "convexStopConfig",
        json!({"maxNumSteps": 1000, "minNumSteps": "100", "autoregressiveOrder": "4", "learningRateParameterName": "lr", "useSeconds": true}),
    );
    let out = back(&domain(alias));
    assert_eq!(out, with("convexAutomatedStoppingSpec", convex.clone()));
    let refused = |spec: Value| {
        let wire: StudySpecW = serde_json::from_value(spec).expect("parses");
        wire.into_domain(&Limits::default()).expect_err("refused").to_string()
    };
    let mut two = with("convexAutomatedStoppingSpec", convex.clone());
    two["decayCurveStoppingSpec"] = json!({});
    assert!(refused(two).contains("studySpec.convexAutomatedStoppingSpec"));
    let mut all = convex.clone();
    all["updateAllStoppedTrials"] = json!(true);
    assert!(refused(with("convexAutomatedStoppingSpec", all)).contains("convexAutomatedStoppingSpec.updateAllStoppedTrials"));
    let mut not_double = convex.clone();
    not_double["learningRateParameterName"] = json!("batch");
    assert!(refused(with("convexAutomatedStoppingSpec", not_double)).contains("learningRateParameterName"));
    let mut zero = convex;
    zero["minMeasurementCount"] = json!("0");
    assert!(refused(with("convexAutomatedStoppingSpec", zero)).contains("minMeasurementCount"));
    // Study stopping: rules that contradict each other, or that need one objective (this
    // spec has two), are refused naming the field.
    let stopping = |rules: Value| {
        let mut spec = full_spec();
        spec["studyStoppingConfig"] = rules;
        spec
    };
    assert!(refused(stopping(json!({"minNumTrials": 9, "maxNumTrials": 5}))).contains("studyStoppingConfig.minNumTrials"));
    assert!(refused(stopping(json!({"maxNumTrialsNoProgress": 5}))).contains("studyStoppingConfig.maxNumTrialsNoProgress"));
    assert!(refused(stopping(json!({"maxDurationNoProgress": "60s"}))).contains("studyStoppingConfig.maxDurationNoProgress"));
    let huge = refused(stopping(json!({"maximumRuntimeConstraint": {"maxDuration": "1000000000000000013.287555072s"}})));
    assert!(huge.contains("maximumRuntimeConstraint.maxDuration") && huge.contains("at most 315576000000s"), "{huge}");
    domain(stopping(json!({"minNumTrials": 5, "maxNumTrials": 5})));
}

fn assignment() -> Assignment {
    Assignment::new(BTreeMap::from([
        ("lr".into(), ParamValue::Float(0.01)),
        ("beta".into(), ParamValue::Float(0.9)),
        ("batch".into(), ParamValue::Float(32.0)),
        ("model".into(), ParamValue::Categorical("conv".into())),
        ("layers".into(), ParamValue::Int(2)),
        ("pool".into(), ParamValue::Float(2.0)),
        ("scale".into(), ParamValue::Float(1.5)),
    ]))
}

#[test]
fn a_trial_round_trips_and_its_parameters_come_back_as_the_assignment() {
    let (spec, _) = domain(full_spec());
    let m = |step: i64, loss: f64| Measurement {
        step_count: step,
        elapsed_secs: 12.5,
        metrics: BTreeMap::from([("loss".to_owned(), loss), ("acc".to_owned(), 0.75)]),
    };
    let trial = Trial {
        id: 3,
        state: TrialState::Succeeded,
        assignment: assignment(),
        measurements: vec![m(1, 0.5)],
        final_measurement: Some(m(2, 0.25)),
        client_id: "worker-1".into(),
        infeasible_reason: String::new(),
        start_time_ms: 1_700_000_000_000,
        end_time_ms: Some(1_700_000_060_500),
        stop_time_ms: None,
        resumed: None,
        space_revision: 0,
        labels: BTreeMap::new(),
    };
    // Parameters in the space's order; durations and times at millisecond precision.
    let wire = serde_json::to_value(TrialW::from_domain(&trial, "projects/p/locations/l/studies/1", &spec.space)).unwrap();
    assert_eq!(
        wire,
        json!({
            "name": "projects/p/locations/l/studies/1/trials/3",
            "id": "3",
            "state": "SUCCEEDED",
            "parameters": [
                {"parameterId": "lr", "value": 0.01},
                {"parameterId": "beta", "value": 0.9},
                {"parameterId": "batch", "value": 32.0},
                {"parameterId": "model", "value": "conv"},
                {"parameterId": "layers", "value": 2},
                {"parameterId": "pool", "value": 2.0},
                {"parameterId": "scale", "value": 1.5}
            ],
            "finalMeasurement": {"elapsedDuration": "12.500s", "stepCount": "2", "metrics": [{"metricId": "acc", "value": 0.75}, {"metricId": "loss", "value": 0.25}]},
            "measurements": [{"elapsedDuration": "12.500s", "stepCount": "1", "metrics": [{"metricId": "acc", "value": 0.75}, {"metricId": "loss", "value": 0.5}]}],
            "startTime": "2023-11-14T22:13:20.000Z",
            "endTime": "2023-11-14T22:14:20.500Z",
            "clientId": "worker-1"
        })
    );
    let back: TrialW = serde_json::from_value(wire).unwrap();
    assert_eq!(assignment_from_wire(back.parameters.clone(), &spec).unwrap(), trial.assignment);
    let fm = back.final_measurement.clone().unwrap();
    assert_eq!(measurement_from_wire(fm, &spec, "finalMeasurement", true).unwrap(), trial.final_measurement.unwrap());
}

#[test]
fn parameters_and_measurements_are_checked_on_the_way_in() {
    let (spec, _) = domain(full_spec());
    let params: Vec<ParameterW> = serde_json::from_value(json!([{"parameterId": "lr", "value": 0.01}])).unwrap();
    let e = assignment_from_wire(params, &spec).unwrap_err().to_string();
    assert!(e.contains("beta") || e.contains("model"), "a missing active parameter is named: {e}");
    let m: MeasurementW = serde_json::from_value(json!({"metrics": [{"metricId": "loss", "value": 1.0}]})).unwrap();
    assert!(measurement_from_wire(m.clone(), &spec, "finalMeasurement", false).is_ok(), "an intermediate measurement may lack a metric");
    let e = measurement_from_wire(m, &spec, "finalMeasurement", true).unwrap_err().to_string();
    assert!(e.contains("acc"), "a final one may not: {e}");
}

#[test]
fn operations_have_vertex_shapes() {
    let name = "projects/p/locations/l/studies/1/operations/7".to_owned();
    assert_eq!(
        serde_json::to_value(pending_suggest_operation(name.clone(), "w", "2023-11-14T22:13:20Z")).unwrap(),
        json!({
            "name": name,
            "metadata": {
                "@type": "type.googleapis.com/google.cloud.aiplatform.v1.SuggestTrialsMetadata",
                "genericMetadata": {"createTime": "2023-11-14T22:13:20Z", "updateTime": "2023-11-14T22:13:20Z"},
                "clientId": "w"
            },
            "done": false
        })
    );
    let done = serde_json::to_value(suggest_operation(name.clone(), "w", "t", vec![], StudyStateW::COMPLETED)).unwrap();
    assert_eq!(done["done"], true);
    assert_eq!(done["response"]["@type"], "type.googleapis.com/google.cloud.aiplatform.v1.SuggestTrialsResponse");
    assert_eq!(done["response"]["studyState"], "COMPLETED");
    let failed =
        serde_json::to_value(failed_suggest_operation(name.clone(), "w", "t", "u", StatusW { code: 13, message: "no".into() })).unwrap();
    assert_eq!((failed["done"].clone(), failed["error"].clone()), (json!(true), json!({"code": 13, "message": "no"})));
    assert!(failed.get("response").is_none(), "an error instead of a response");
    let stop = serde_json::to_value(early_stopping_operation(
        name,
        "projects/p/locations/l/studies/1",
        "projects/p/locations/l/studies/1/trials/2",
        "t",
        true,
    ))
    .unwrap();
    assert_eq!(
        stop["response"],
        json!({"@type": "type.googleapis.com/google.cloud.aiplatform.v1.CheckTrialEarlyStoppingStateResponse", "shouldStop": true})
    );
    assert_eq!(stop["metadata"]["@type"], "type.googleapis.com/google.cloud.aiplatform.v1.CheckTrialEarlyStoppingStateMetatdata");
}
