//! `bo-bench calibration`: whether a designer's predictions mean what they say. For each problem
//! and seed, a real run — `GP_BANDIT` proposing, the problem's noise added — of the largest small
//! size plus the held-out trials; for a size beyond it, the run is continued as a long study
//! goes on (half uniform points, half small steps from one of its 20 best), since a designer
//! fitted 3,000 times is out of reach here. Each designer is fitted on the first `n` trials and
//! asked to predict the run's next trials (where the study was going) and uniform random points
//! (the whole space); against the noise-free value there it scores the coverage of its central
//! 50 % and 90 % intervals and its mean log predictive density, beside a constant baseline (a
//! normal with the training values' mean and deviation). A designer that predicts only at
//! points of its own (REMBO, at its embeddings) is asked at its own next proposals instead.
//! Must not: judge a model against noisy values (its intervals are of the latent objective).

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Context, Result};
use bo_core::designer::{Predictive, designer_for};
use bo_core::{Assignment, Observation, Outcome};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;

use crate::harness::{Noise, spec_for};
use crate::problems::Problem;

/// The designers that learn a model, as `--designers` lists them by default.
pub const DESIGNERS: &str = "GP_BANDIT,ADD_GP_UCB,ADD_TREE,BRANCHING_NESTED,OVERLAP_ADD_GP,REMBO,AUTO";

/// One problem of each family: classic, tree, high-dimensional, mixed, noisy.
pub const PROBLEMS: &str = "hartmann6,jenatton,branin_d25,mixed_styblinski_tang8,hartmann6_noisy";

/// What a calibration run covers.
pub struct Settings {
    /// Designers by algorithm name.
    pub designers: Vec<String>,
    /// Training sizes.
    pub sizes: Vec<usize>,
    /// Seeds per problem (0, 1, …).
    pub seeds: u64,
    /// The run's next trials predicted at each size.
    pub held_out: usize,
    /// Uniform random points predicted at each size.
    pub random: usize,
    /// `algorithmConfig` of every designer judged (null: each its defaults); the trials are
    /// `GP_BANDIT`'s with its defaults whatever it is, so settings are compared on the same data.
    pub config: serde_json::Value,
}

/// One designer on one problem at one size, pooled over seeds.
#[derive(Serialize)]
pub struct Row {
    pub designer: String,
    pub problem: String,
    pub size: usize,
    /// Points predicted, over every seed.
    pub points: usize,
    /// Fraction of true values within the central 50 % interval.
    pub cover_50: f64,
    /// Fraction within the central 90 % interval.
    pub cover_90: f64,
    /// Mean log predictive density of the true values.
    pub log_density: f64,
    /// The constant baseline's.
    pub baseline_log_density: f64,
    /// Median seconds of one fit.
    pub fit_seconds: f64,
    /// Median seconds of the first prediction after a fit (its calibration is found then).
    pub predict_seconds: f64,
    /// The median factor a subset's model widened its predictions by (1 where it did not, or
    /// fitted every trial).
    pub widened: f64,
    /// Why there are no numbers, when there are none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Each seed's points and how many fell in the 50 % and 90 % intervals: a seed's held-out
    /// trials are one cluster where its search went, so the pooled coverage's sampling error
    /// is over seeds, not points ([`pooled`]).
    pub by_seed: Vec<[usize; 3]>,
}

#[derive(Default)]
struct Tally {
    points: usize,
    in_50: usize,
    in_90: usize,
    log_density: f64,
    baseline: f64,
    fit_seconds: Vec<f64>,
    predict_seconds: Vec<f64>,
    widened: Vec<f64>,
    skipped: Option<String>,
    by_seed: BTreeMap<u64, [usize; 3]>,
}

impl Tally {
    fn add(&mut self, seed: u64, predictive: &[Predictive<'_>], truth: &[f64], baseline: (f64, f64)) {
        let own = self.by_seed.entry(seed).or_default();
        for (p, &y) in predictive.iter().zip(truth) {
            let (in_50, in_90) = (p.quantile(0.25) <= y && y <= p.quantile(0.75), p.quantile(0.05) <= y && y <= p.quantile(0.95));
            *own = [own[0] + 1, own[1] + usize::from(in_50), own[2] + usize::from(in_90)];
            self.points += 1;
            self.in_50 += usize::from(in_50);
            self.in_90 += usize::from(in_90);
            self.log_density += p.log_density(y);
            let z = (y - baseline.0) / baseline.1;
            self.baseline += -0.5 * z * z - baseline.1.ln() - 0.5 * std::f64::consts::TAU.ln();
        }
    }
}

/// The study's trials as a real run makes them: `GP_BANDIT` for the first `small` trials, then
/// the long-study continuation up to `total` (see the module docs). Noise as the problem has it.
fn trials(problem: &Problem, seed: u64, small: usize, total: usize) -> Result<Vec<(Assignment, f64)>> {
    let spec = spec_for(problem, "GP_BANDIT", serde_json::json!({}));
    let designer = designer_for(&spec).context("GP_BANDIT")?;
    let study = bo_core::Problem { spec, seed, priors: Vec::new() };
    let space = (problem.space)();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut noise = Noise::new(problem, seed);
    let mut history: Vec<Observation> = Vec::new();
    let mut out: Vec<(Assignment, f64)> = Vec::new();
    let mut warm = None;
    while out.len() < total {
        let a = if out.len() < small {
            let fitted = designer.fit(&study, &history, warm.as_ref(), &mut rng)?;
            let a = fitted.model.suggest(&[], 1, &mut rng)?.into_iter().next().context("GP_BANDIT proposed nothing")?;
            warm = Some(fitted.state);
            a
        } else if rng.random::<bool>() {
            uniform(&space, &mut rng)
        } else {
            let mut best: Vec<&(Assignment, f64)> = out.iter().collect();
            best.sort_by(|a, b| a.1.total_cmp(&b.1));
            let from = best[rng.random_range(0..best.len().min(20))];
            let mut u = space.encode(&from.0);
            for x in &mut u {
                *x = if (0.0..=1.0).contains(x) { (*x + 0.05 * normal(&mut rng)).clamp(0.0, 1.0) } else { rng.random() };
            }
            space.decode(&u)
        };
        let y = noise.observe((problem.eval)(&a));
        history.push(Observation {
            objective_sd: None,
            assignment: a.clone(),
            outcome: Outcome::Measured(BTreeMap::from([("f".to_owned(), y)])),
        });
        out.push((a, y));
    }
    Ok(out)
}

fn uniform(space: &bo_core::SearchSpace, rng: &mut StdRng) -> Assignment {
    space.decode(&(0..space.n_params()).map(|_| rng.random::<f64>()).collect::<Vec<_>>())
}

fn normal(rng: &mut StdRng) -> f64 {
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// The calibration of every designer in `settings` on `problem`, a row per designer and size.
pub fn calibrate(problem: &Problem, settings: &Settings) -> Result<Vec<Row>> {
    let mut sizes = settings.sizes.clone();
    sizes.sort_unstable();
    let small = sizes.iter().copied().filter(|&n| n <= 200).max().unwrap_or(0) + settings.held_out;
    let total = sizes.iter().max().copied().unwrap_or(0) + settings.held_out;
    let mut tallies: BTreeMap<(String, usize), Tally> = BTreeMap::new();
    let space = (problem.space)();
    for seed in 0..settings.seeds {
        let run = trials(problem, seed, small.min(total), total)?;
        let mut rng = StdRng::seed_from_u64(seed ^ 0x6361_6c69);
        for &n in &sizes {
            let train: Vec<Observation> = run[..n]
                .iter()
                .map(|(a, y)| Observation {
                    objective_sd: None,
                    assignment: a.clone(),
                    outcome: Outcome::Measured(BTreeMap::from([("f".to_owned(), *y)])),
                })
                .collect();
            let values: Vec<f64> = run[..n].iter().map(|(_, y)| *y).collect();
            let mean = values.iter().sum::<f64>() / n as f64;
            let sd = (values.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0).max(1.0)).sqrt().max(1e-12);
            let mut points: Vec<Assignment> = run[n..n + settings.held_out].iter().map(|(a, _)| a.clone()).collect();
            points.extend((0..settings.random).map(|_| uniform(&space, &mut rng)));
            for name in &settings.designers {
                let tally = tallies.entry((name.clone(), n)).or_default();
                if tally.skipped.is_some() {
                    continue;
                }
                let spec = spec_for(problem, name, settings.config.clone());
                let designer = match designer_for(&spec) {
                    Ok(d) => d,
                    Err(e) => {
                        tally.skipped = Some(e.to_string());
                        continue;
                    }
                };
                let study = bo_core::Problem { spec, seed, priors: Vec::new() };
                let start = Instant::now();
                let fitted = match designer.fit(&study, &train, None, &mut StdRng::seed_from_u64(seed)) {
                    Ok(f) => f,
                    Err(e) => {
                        tally.skipped = Some(e.to_string());
                        continue;
                    }
                };
                tally.fit_seconds.push(start.elapsed().as_secs_f64());
                let start = Instant::now();
                let predicted = fitted.model.predictor().and_then(|p| p.predictive(&points));
                tally.predict_seconds.push(start.elapsed().as_secs_f64());
                tally.widened.push(fitted.model.describe()["predictionsWidened"]["factor"].as_f64().unwrap_or(1.0));
                if let Some(predictive) = predicted {
                    let truth: Vec<f64> = points.iter().map(problem.eval).collect();
                    tally.add(seed, &predictive, &truth, (mean, sd));
                } else {
                    // A model that predicts only at points of its own: its next proposals.
                    let own = fitted.model.suggest(&[], settings.held_out, &mut rng)?;
                    match fitted.model.predictor().and_then(|p| p.predictive(&own)) {
                        Some(predictive) => {
                            let truth: Vec<f64> = own.iter().map(problem.eval).collect();
                            tally.add(seed, &predictive, &truth, (mean, sd));
                        }
                        None => tally.skipped = Some("no predictive distribution".into()),
                    }
                }
            }
        }
    }
    Ok(tallies
        .into_iter()
        .map(|((designer, size), t)| {
            let per = |v: f64| if t.points == 0 { f64::NAN } else { v / t.points as f64 };
            let median = |mut v: Vec<f64>| {
                v.sort_by(f64::total_cmp);
                v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
            };
            Row {
                designer,
                problem: problem.name.to_owned(),
                size,
                points: t.points,
                cover_50: per(t.in_50 as f64),
                cover_90: per(t.in_90 as f64),
                log_density: per(t.log_density),
                baseline_log_density: per(t.baseline),
                fit_seconds: median(t.fit_seconds),
                predict_seconds: median(t.predict_seconds),
                widened: median(t.widened),
                skipped: t.skipped,
                by_seed: t.by_seed.into_values().collect(),
            }
        })
        .collect())
}

/// Prints `rows` as a table.
pub fn print(rows: &[Row]) {
    println!(
        "{:<16} {:<24} {:>6} {:>6} {:>7} {:>7} {:>9} {:>9} {:>8} {:>9} {:>7}",
        "designer", "problem", "size", "points", "50 %", "90 %", "log dens", "baseline", "fit s", "predict s", "widened"
    );
    for r in rows {
        match &r.skipped {
            Some(why) if r.points == 0 => println!("{:<16} {:<24} {:>6}  skipped: {why}", r.designer, r.problem, r.size),
            _ => println!(
                "{:<16} {:<24} {:>6} {:>6} {:>6.1}% {:>6.1}% {:>9.2} {:>9.2} {:>8.2} {:>9.3} {:>7.2}",
                r.designer,
                r.problem,
                r.size,
                r.points,
                100.0 * r.cover_50,
                100.0 * r.cover_90,
                r.log_density,
                r.baseline_log_density,
                r.fit_seconds,
                r.predict_seconds,
                r.widened
            ),
        }
    }
}

/// One designer at one size over every problem: its coverages with their sampling error.
pub struct Pooled {
    pub designer: String,
    pub size: usize,
    pub points: usize,
    pub cover_50: f64,
    pub cover_90: f64,
    /// The standard errors of the two coverages: their deviation over resamplings of the
    /// (problem, seed) clusters with replacement.
    pub error_50: f64,
    pub error_90: f64,
    pub log_density: f64,
}

/// `rows` pooled by designer and size over every problem's points, each coverage
/// with its standard error by a bootstrap over the (problem, seed) clusters — what separates a
/// model's miscalibration from the measurement's own scatter.
pub fn pooled(rows: &[Row]) -> Vec<Pooled> {
    let mut groups: BTreeMap<(String, usize), Vec<&Row>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.points > 0) {
        groups.entry((r.designer.clone(), r.size)).or_default().push(r);
    }
    let mut rng = StdRng::seed_from_u64(0x706f_6f6c);
    groups
        .into_iter()
        .map(|((designer, size), rows)| {
            let clusters: Vec<[usize; 3]> = rows.iter().flat_map(|r| r.by_seed.iter().copied()).collect();
            let cover = |chosen: &mut dyn Iterator<Item = [usize; 3]>| {
                let [n, a, b] = chosen.fold([0; 3], |s, c| [s[0] + c[0], s[1] + c[1], s[2] + c[2]]);
                (a as f64 / n.max(1) as f64, b as f64 / n.max(1) as f64)
            };
            let (cover_50, cover_90) = cover(&mut clusters.iter().copied());
            let resampled: Vec<(f64, f64)> =
                (0..2000).map(|_| cover(&mut (0..clusters.len()).map(|_| clusters[rng.random_range(0..clusters.len())]))).collect();
            let deviation = |v: &dyn Fn(&(f64, f64)) -> f64, at: f64| {
                (resampled.iter().map(|r| (v(r) - at).powi(2)).sum::<f64>() / resampled.len() as f64).sqrt()
            };
            let points: usize = rows.iter().map(|r| r.points).sum();
            Pooled {
                error_50: deviation(&|r| r.0, cover_50),
                error_90: deviation(&|r| r.1, cover_90),
                cover_50,
                cover_90,
                log_density: rows.iter().map(|r| r.log_density * r.points as f64).sum::<f64>() / points as f64,
                points,
                designer,
                size,
            }
        })
        .collect()
}

/// Prints `pooled` as a table: a row is within the target when both coverages are within 7
/// points of their levels.
pub fn print_pooled(pooled: &[Pooled]) {
    println!(
        "{:<16} {:>6} {:>6} {:>14} {:>14} {:>9} {:>7}",
        "designer", "size", "points", "50 % (± se)", "90 % (± se)", "log dens", "within"
    );
    for p in pooled {
        let within = (100.0 * p.cover_50 - 50.0).abs() <= 7.0 && (100.0 * p.cover_90 - 90.0).abs() <= 7.0;
        println!(
            "{:<16} {:>6} {:>6} {:>6.1}% ± {:>4.1} {:>6.1}% ± {:>4.1} {:>9.2} {:>7}",
            p.designer,
            p.size,
            p.points,
            100.0 * p.cover_50,
            100.0 * p.error_50,
            100.0 * p.cover_90,
            100.0 * p.error_90,
            p.log_density,
            if within { "7" } else { "" }
        );
    }
}

#[cfg(test)]
mod tests {
    use bo_core::designer::testing::predictions_are_bounded_on;

    use super::{DESIGNERS, PROBLEMS};
    use crate::problems::by_name;

    /// No prediction of any learning designer, under any output warp, on a problem of each of
    /// the suite's families (and one whose values span 300 units), lies beyond the observed
    /// range widened by twice its own 90 % interval; every prediction is finite and ordered.
    #[test]
    fn predictions_stay_near_the_data_on_the_suites_problems() {
        let mut beyond = Vec::new();
        for name in PROBLEMS.split(',').chain(["styblinski_tang8"]) {
            let problem = by_name(name).expect("a suite problem");
            let space = (problem.space)();
            let mut checked = 0;
            for algorithm in DESIGNERS.split(',') {
                let (fits, found) = predictions_are_bounded_on(algorithm, name, &space, &problem.eval);
                checked += fits;
                beyond.extend(found);
            }
            assert!(checked > 0, "no designer predicted on {name}");
        }
        assert!(beyond.is_empty(), "{} predictions beyond the data:\n{}", beyond.len(), beyond.join("\n"));
    }
}
