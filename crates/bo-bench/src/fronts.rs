//! `bo-bench fronts`: what choosing the optimal trials of a study of several objectives costs,
//! from 2 to 20 objectives — the cut of a front larger than the cap by hypervolume contribution,
//! exact where it fits its budget, estimated beyond (`bo_core::optimal`) — and how much
//! hypervolume the cut keeps against the exact cut where that one can be computed at all.
//! Every trial lies on the positive part of a sphere, so every one is on the front: the worst
//! case for the cut.

use std::time::Instant;

use bo_core::Goal;
use bo_core::hypervolume::{hypervolume, reference_point};
use bo_core::optimal::{CUT_CHECKS, front_ids};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;

/// One row of the table.
#[derive(Serialize)]
pub struct Row {
    objectives: usize,
    trials: usize,
    cap: usize,
    kept: usize,
    seconds: f64,
    /// Hypervolume of the kept trials over that of the exact cut's (where it was computed).
    against_exact: Option<f64>,
}

fn sphere(n: usize, m: usize, seed: u64) -> Vec<(i64, Vec<f64>)> {
    let mut rng = StdRng::seed_from_u64(seed);
    (1..=n as i64)
        .map(|id| {
            let v: Vec<f64> = (0..m).map(|_| rng.random::<f64>() + 0.01).collect();
            let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
            (id, v.iter().map(|x| x / norm).collect())
        })
        .collect()
}

/// Times the cut for each number of objectives at each size; `exact_up_to` trials at most for
/// the comparison with the exact cut (it takes minutes beyond a few hundred at four objectives).
pub fn run(objectives: &[usize], trials: &[usize], cap: usize, exact_up_to: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    for &m in objectives {
        for &n in trials {
            let scored = sphere(n, m, (m * 1000 + n) as u64);
            let goals = vec![Goal::Maximize; m];
            let started = Instant::now();
            let kept = front_ids(&goals, scored.clone(), cap, CUT_CHECKS);
            let seconds = started.elapsed().as_secs_f64();
            let against_exact = (n <= exact_up_to && m > 2).then(|| {
                let exact = front_ids(&goals, scored.clone(), cap, u64::MAX);
                let points = |ids: &[i64]| -> Vec<Vec<f64>> { ids.iter().map(|id| scored[*id as usize - 1].1.clone()).collect() };
                let all: Vec<Vec<f64>> = scored.iter().map(|(_, v)| v.clone()).collect();
                let reference = reference_point(&all).expect("points");
                hypervolume(&points(&kept), &reference) / hypervolume(&points(&exact), &reference)
            });
            println!(
                "{m:>2} objectives, {n:>5} trials, cap {cap}: kept {:>4} in {seconds:>7.3} s{}",
                kept.len(),
                against_exact.map(|r| format!(", {:.4} of the exact cut's hypervolume", r)).unwrap_or_default()
            );
            rows.push(Row { objectives: m, trials: n, cap, kept: kept.len(), seconds, against_exact });
        }
    }
    rows
}
