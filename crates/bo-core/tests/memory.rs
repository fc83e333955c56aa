//! What the service's memory budgets count holds against what is really allocated: a counting
//! allocator measures the heap a decoded trial, packed trials and each designer's fitted model
//! keep, and their estimates (`Trial::memory_bytes`, `PackedTrials::memory_bytes`,
//! `Model::memory_bytes`), which the trial mirror and the model cache are bounded by, must cover
//! it (and not overstate it more than threefold). One test in its own binary, so nothing else
//! allocates meanwhile.

use std::alloc::System;
use std::collections::BTreeMap;

use bo_core::designer::testing::fixtures;
use bo_core::designer::{Problem, designer_for};
use bo_core::{Assignment, Goal, Measurement, Observation, Outcome, PackedTrials, ParamValue, StudySpec, Trial, TrialState};
use rand::SeedableRng;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The bytes allocated and not freed since `region` began (a reallocation's growth or
/// shrinkage is already in `bytes_allocated` or `bytes_deallocated`; `bytes_reallocated` repeats
/// it).
fn held(region: &Region<'_, System>) -> isize {
    let c = region.change();
    c.bytes_allocated as isize - c.bytes_deallocated as isize
}

/// Whether `estimate` covers `measured` without overstating it more than threefold.
fn within(what: &str, estimate: usize, measured: isize) {
    let measured = measured.max(1) as f64;
    let ratio = estimate as f64 / measured;
    println!("{what}: estimate {estimate} B, measured {measured} B, ratio {ratio:.2}");
    if std::env::var("MEMORY_REPORT").is_err() {
        assert!((1.0..=3.0).contains(&ratio), "{what}: estimate {estimate} B for {measured} B measured (ratio {ratio:.2})");
    }
}

/// A trial as the store keeps it: its parameters and final measurement as JSON, its strings.
struct Stored {
    parameters: String,
    final_measurement: String,
    client_id: String,
    infeasible_reason: String,
    labels: String,
}

impl Stored {
    /// Decoded as the store decodes a trial.
    fn decode(&self) -> Trial {
        Trial {
            id: 1,
            state: TrialState::Succeeded,
            assignment: serde_json::from_str(&self.parameters).unwrap(),
            measurements: vec![],
            final_measurement: Some(serde_json::from_str(&self.final_measurement).unwrap()),
            client_id: self.client_id.as_str().into(),
            infeasible_reason: self.infeasible_reason.as_str().into(),
            start_time_ms: 1,
            end_time_ms: Some(2),
            stop_time_ms: None,
            resumed: None,
            space_revision: 0,
            labels: serde_json::from_str(&self.labels).unwrap(),
        }
    }
}

/// The largest trial the default limits allow: 300 parameters with ids and categorical values
/// of 128 characters, 20 metrics of 128-character ids, a client id of 128, a reason of 1,000
/// characters and 16 labels of 128-character keys and values.
fn largest() -> Stored {
    let long = |k: usize, c: char| format!("{k:03}{}", c.to_string().repeat(125));
    let assignment: Assignment = (0..300)
        .map(|k| (long(k, 'p'), if k % 2 == 0 { ParamValue::categorical(&long(k, 'v')) } else { ParamValue::Float(0.5) }))
        .collect();
    let metrics: BTreeMap<String, f64> = (0..20).map(|k| (long(k, 'm'), k as f64)).collect();
    Stored {
        parameters: serde_json::to_string(&assignment).unwrap(),
        final_measurement: serde_json::to_string(&Measurement { step_count: 1, elapsed_secs: 1.0, metrics }).unwrap(),
        client_id: "c".repeat(128),
        infeasible_reason: "r".repeat(1000),
        labels: serde_json::to_string(&(0..16).map(|k| (long(k, 'k'), long(k, 'l'))).collect::<BTreeMap<String, String>>()).unwrap(),
    }
}

fn small() -> Stored {
    let a = Assignment::from_iter([("x", ParamValue::Float(0.5)), ("kind", ParamValue::Categorical("b".into()))]);
    let m = Measurement { step_count: 1, elapsed_secs: 0.0, metrics: BTreeMap::from([("loss".to_owned(), 1.0)]) };
    Stored {
        parameters: serde_json::to_string(&a).unwrap(),
        final_measurement: serde_json::to_string(&m).unwrap(),
        client_id: "worker-1".into(),
        infeasible_reason: String::new(),
        labels: "{}".into(),
    }
}

#[test]
fn budgets_count_what_is_allocated() {
    // Trials: the largest legal ones, and small ones, as decoded from the store.
    for (what, stored) in [("the largest legal trial", largest()), ("a small trial", small())] {
        let region = Region::new(GLOBAL);
        let trials: Vec<Trial> = (0..100).map(|_| stored.decode()).collect();
        let measured = held(&region);
        let estimate: usize = trials.iter().map(Trial::memory_bytes).sum::<usize>();
        within(what, estimate, measured);
        drop(trials);
    }

    // Packed trials, as the trial mirror keeps them: a study of 300 categorical parameters with
    // 128-character ids and values (four values each), and one of small trials. The large shape
    // is held at least ten times more densely packed than decoded.
    let wide = |i: usize| {
        let long = |k: usize, c: char| format!("{k:03}{}", c.to_string().repeat(125));
        let assignment: Assignment = (0..300).map(|k| (long(k, 'p'), ParamValue::categorical(&long((k + i) % 4, 'v')))).collect();
        let m = Measurement { step_count: 1, elapsed_secs: 1.0, metrics: BTreeMap::from([("accuracy".to_owned(), i as f64)]) };
        Stored {
            parameters: serde_json::to_string(&assignment).unwrap(),
            final_measurement: serde_json::to_string(&m).unwrap(),
            client_id: format!("worker-{}", i % 8),
            infeasible_reason: String::new(),
            labels: "{}".into(),
        }
    };
    for (what, stored, n, denser) in
        [("300 categorical parameters", (0..4).map(wide).collect::<Vec<_>>(), 200, 10), ("small", vec![small()], 1000, 1)]
    {
        let region = Region::new(GLOBAL);
        let trials: Vec<Trial> = (0..n).map(|i| Trial { id: i as i64 + 1, ..stored[i % stored.len()].decode() }).collect();
        let decoded = held(&region);
        let region = Region::new(GLOBAL);
        let packed = PackedTrials::from_trials(&trials);
        let measured = held(&region);

        within(&format!("{n} packed trials, {what}"), packed.memory_bytes(), measured);
        println!("{what}: {decoded} B decoded, {measured} B packed, {:.1}x", decoded as f64 / measured as f64);
        assert!(decoded >= denser * measured, "{what}: {decoded} B decoded, {measured} B packed");
        assert_eq!(packed.unpack(), trials);
        drop((trials, packed));
    }

    // Models: every designer that learns, fitted on 150 trials of six parameters.
    let space = fixtures::unit_cube(6);
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let n: usize = std::env::var("MEMORY_N").ok().and_then(|v| v.parse().ok()).unwrap_or(150);
    let history: Vec<Observation> = (0..n)
        .map(|_| {
            use rand::RngExt;
            let a: Assignment = (0..6).map(|k| (format!("x{k}"), ParamValue::Float(rng.random::<f64>()))).collect();
            let loss = (0..6).map(|k| (a.0[format!("x{k}").as_str()].as_f64().unwrap() - 0.3).powi(2)).sum::<f64>();
            let accuracy = (-loss).exp();
            Observation {
                objective_sd: None,
                assignment: a,
                outcome: Outcome::Measured(BTreeMap::from([("loss".to_owned(), loss), ("accuracy".to_owned(), accuracy)])),
            }
        })
        .collect();
    // The matrix products' per-thread scratch (faer's GEMM keeps a buffer of about twice the
    // L3 cache for each thread that multiplies, for the thread's life): taken before measuring.
    {
        let spec = StudySpec::new("loss", Goal::Minimize, space.clone(), "GP_BANDIT");
        let problem = Problem { spec: spec.clone(), seed: 1, priors: vec![] };
        let designer = designer_for(&spec).unwrap();
        drop(designer.fit(&problem, &history, None, &mut rand::rngs::StdRng::seed_from_u64(1)).unwrap());
    }
    let two = |algorithm: &str| {
        let mut spec = StudySpec::new("loss", Goal::Minimize, space.clone(), algorithm);
        spec.metrics.push(bo_core::MetricSpec::objective("accuracy", Goal::Maximize));
        spec
    };
    let specs = bo_core::ALGORITHMS
        .iter()
        .map(|a| (a.to_string(), StudySpec::new("loss", Goal::Minimize, space.clone(), a)))
        .chain(["GP_BANDIT", "ADD_TREE"].map(|a| (format!("{a}, two objectives"), two(a))));
    for (algorithm, spec) in specs {
        let algorithm = algorithm.as_str();
        let Ok(designer) = designer_for(&spec) else { continue };
        if !designer.learns() {
            continue;
        }
        let problem = Problem { spec, seed: 1, priors: vec![] };
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let region = Region::new(GLOBAL);
        let fitted = designer.fit(&problem, &history, None, &mut rng).unwrap();
        let model = fitted.model;
        drop(fitted.state);
        let measured = held(&region);
        within(algorithm, model.memory_bytes(), measured);
        drop(model);
    }
}
