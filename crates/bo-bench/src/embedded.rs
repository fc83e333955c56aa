//! Problems too large for a search space: Branin in D = 10⁶ and 10⁹ (Wang et al. 2016 §4, "D = 1 000 000
//! 000"). A study cannot list 10⁹ parameters, so only REMBO runs these, through
//! `bo_core::embedding::Embedded` — the designer's own algorithm on the embeddings'
//! coordinates — with the objective reading its two coordinates of `p_X(A y)` lazily: two rows of
//! `A` per evaluation, never the matrix.

use anyhow::{Result, bail};
use bo_core::ObservationNoise;
use bo_core::designer::RemboParams;
use bo_core::embedding::Embedded;
use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::harness::RunTrace;
use crate::problems::high_dim::branin_centred;

/// A problem on `[−1, 1]^dim` whose objective reads two coordinates.
pub struct Lazy {
    /// Its command-line name.
    pub name: &'static str,
    /// The ambient dimension D.
    pub dim: u64,
    /// The minimum value.
    pub optimum: f64,
    /// The coordinates it reads (fixed, as Wang et al. 2016's "selected once using a random permutation").
    pub coordinates: [u64; 2],
}

/// Two fixed, distinct coordinates of `0..dim`.
fn pick(dim: u64) -> [u64; 2] {
    let i = 0x2545_F491_4F6C_DD1D % dim;
    let j = (i + 1 + 0x9E37_79B9_7F4A_7C15 % (dim - 1)) % dim;
    [i, j]
}

/// Every lazy problem.
pub fn all() -> Vec<Lazy> {
    [("branin_d1e6", 1_000_000u64), ("branin_d1e9", 1_000_000_000)]
        .into_iter()
        .map(|(name, dim)| Lazy { name, dim, optimum: 0.397887, coordinates: pick(dim) })
        .collect()
}

/// The lazy problem named `name`.
pub fn by_name(name: &str) -> Option<Lazy> {
    all().into_iter().find(|p| p.name == name)
}

/// Runs REMBO (settings from `config`, as a study's `algorithmConfig`; the embeddings' seed is
/// the run's, as a study's is) on `problem` for `budget` evaluations.
pub fn run(problem: &Lazy, algorithm: &str, config: &serde_json::Value, budget: usize, seed: u64) -> Result<RunTrace> {
    if algorithm != "REMBO" {
        bail!("{} has {} parameters, too many for a search space: only REMBO runs it", problem.name, problem.dim);
    }
    let params: RemboParams = if config.is_null() { RemboParams::default() } else { serde_json::from_value(config.clone())? };
    let settings = params.settings(problem.dim)?;
    let embedded = Embedded::new(settings, params.seed.unwrap_or(seed));
    let mut rng = StdRng::seed_from_u64(seed);
    let mut data: Vec<Vec<(Vec<f64>, f64)>> = vec![Vec::new(); settings.k];
    let mut warm = vec![None; settings.k];
    let mut trace = RunTrace {
        seed,
        regret: Vec::with_capacity(budget),
        suggest_seconds: Vec::with_capacity(budget),
        best_observed: None,
        graph_recovery: None,
        suggestions: Vec::new(),
        auto_choices: Vec::new(),
        cells: None,
    };
    let mut best = f64::INFINITY;
    for _ in 0..budget {
        let start = std::time::Instant::now();
        let fit = embedded.fit(&data, &warm, false, ObservationNoise::Unspecified, &mut rng)?;
        let (r, w) = fit.propose(&[], &|_, _| true, &mut rng);
        trace.suggest_seconds.push(start.elapsed().as_secs_f64());
        warm = fit.states();
        let e = &embedded.embeddings()[r];
        let y = embedded.y_of(&w);
        let [i, j] = problem.coordinates;
        let value = branin_centred(e.coordinate(i, &y), e.coordinate(j, &y));
        best = best.min(value);
        trace.regret.push((best - problem.optimum).max(0.0));
        data[r].push((w, -value));
    }
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_coordinates_are_distinct_and_inside() {
        for p in all() {
            let [i, j] = p.coordinates;
            assert!(i != j && i < p.dim && j < p.dim, "{}: {i}, {j}", p.name);
        }
    }

    #[test]
    fn other_algorithms_are_refused() {
        let p = by_name("branin_d1e9").unwrap();
        let err = run(&p, "GP_BANDIT", &serde_json::Value::Null, 5, 0).err().unwrap().to_string();
        assert!(err.contains("only REMBO"), "{err}");
    }
}
