//! PED-ANOVA (Watanabe, Bansal, Hutter 2023, "PED-ANOVA: Efficiently Quantifying
//! Hyperparameter Importance in Arbitrary Subspaces"): a parameter matters as much as the
//! distribution of its values among the best trials (the top `γ'` quantile) differs from their
//! distribution among all trials — measured by the Pearson divergence
//! `D = Σ_x p_all(x) (p_top(x) / p_all(x) − 1)²` (the paper's eq. 8, a closed form of the local
//! HPI variance), with each distribution a Parzen estimate on a grid of the parameter's unit
//! interval (categories and short value lists counted per value). In a conditional space a
//! parameter is judged on the trials where it is active. Importances are normalised to sum 1.

use crate::Goal;
use crate::space::Domain;
use crate::space::SearchSpace;
use crate::trial::{Assignment, ParamValue};

/// The top quantile of trials compared with all (`γ'`; Optuna's `target_quantile`).
pub const TOP_QUANTILE: f64 = 0.1;
/// Grid points on a numeric parameter's unit interval.
pub const GRID: usize = 50;
/// Fewest trials (with a value of the objective) for any importance.
pub const MIN_TRIALS: usize = 4;

/// One parameter's PED-ANOVA importance.
#[derive(Clone, Debug, PartialEq)]
pub struct PedAnova {
    /// The parameter.
    pub parameter_id: String,
    /// Its share of the summed divergence (0 when no parameter diverges).
    pub importance: f64,
    /// Trials it was judged on (those where it is active).
    pub trials: usize,
    /// Of those, among the top quantile.
    pub top_trials: usize,
}

/// The importance of every parameter of `space` (in its pre-order), from `observations` — each
/// trial's assignment and objective value, to be minimised or maximised as `goal` says. `None`
/// with fewer than [`MIN_TRIALS`].
pub fn ped_anova(space: &SearchSpace, observations: &[(&Assignment, f64)], goal: Goal) -> Option<Vec<PedAnova>> {
    let finite: Vec<&(&Assignment, f64)> = observations.iter().filter(|(_, v)| v.is_finite()).collect();
    if finite.len() < MIN_TRIALS {
        return None;
    }
    // Ranks by goodness: the top quantile is the best ⌈γ' n⌉ (at least 2).
    let mut order: Vec<usize> = (0..finite.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (finite[a].1, finite[b].1);
        if goal == Goal::Minimize { x.total_cmp(&y) } else { y.total_cmp(&x) }
    });
    let n_top = ((TOP_QUANTILE * finite.len() as f64).ceil() as usize).max(2);
    let mut top = vec![false; finite.len()];
    for &i in &order[..n_top] {
        top[i] = true;
    }
    let mut out: Vec<PedAnova> = space
        .params()
        .into_iter()
        .map(|p| {
            let mut all = Vec::new();
            let mut best = Vec::new();
            for (k, (a, _)) in finite.iter().enumerate() {
                if let Some(v) = a.get(&p.id) {
                    let bin = match (&p.domain, v) {
                        (Domain::Categorical { values }, ParamValue::Categorical(s)) => {
                            values.iter().position(|c| c.as_str() == &**s).map(Bin::Category)
                        }
                        _ => p.to_unit(v).map(Bin::Unit),
                    };
                    if let Some(bin) = bin {
                        all.push(bin);
                        if top[k] {
                            best.push(bin);
                        }
                    }
                }
            }
            let divergence = if best.len() < 2 || all.len() < MIN_TRIALS {
                0.0
            } else {
                match &p.domain {
                    Domain::Categorical { values } => pearson(&counts(&best, values.len()), &counts(&all, values.len())),
                    Domain::Integer { min, max } if max.saturating_sub(*min) < GRID as i64 => {
                        let k = (max - min + 1) as usize;
                        pearson(&counts(&to_buckets(&best, k), k), &counts(&to_buckets(&all, k), k))
                    }
                    Domain::Discrete { values } if values.len() <= GRID => {
                        let k = values.len();
                        pearson(&counts(&to_buckets(&best, k), k), &counts(&to_buckets(&all, k), k))
                    }
                    _ => pearson(&parzen(&best), &parzen(&all)),
                }
            };
            PedAnova { parameter_id: p.id.clone(), importance: divergence, trials: all.len(), top_trials: best.len() }
        })
        .collect();
    let total: f64 = out.iter().map(|p| p.importance).sum();
    for p in &mut out {
        p.importance = if total > 0.0 { p.importance / total } else { 0.0 };
    }
    Some(out)
}

/// A parameter value as the estimator sees it.
#[derive(Clone, Copy, Debug)]
enum Bin {
    /// A category's index.
    Category(usize),
    /// A coordinate of the unit interval.
    Unit(f64),
}

/// Values on `[0, 1]` cut into `k` equal buckets (a linear INTEGER or DISCRETE parameter's own
/// values: the space's unit map puts each value at its bucket's centre).
fn to_buckets(bins: &[Bin], k: usize) -> Vec<Bin> {
    bins.iter()
        .map(|b| match *b {
            Bin::Unit(u) => Bin::Category(((u * k as f64).floor() as usize).min(k - 1)),
            other => other,
        })
        .collect()
}

/// Category probabilities with one pseudo-trial spread evenly (so no category has zero mass).
fn counts(bins: &[Bin], k: usize) -> Vec<f64> {
    let mut c = vec![1.0 / k as f64; k];
    for b in bins {
        if let Bin::Category(i) = *b {
            c[i.min(k - 1)] += 1.0;
        }
    }
    let total = bins.len() as f64 + 1.0;
    c.iter().map(|x| x / total).collect()
}

/// A Parzen estimate on the grid: Gaussian kernels of Scott's bandwidth (at least a grid step),
/// mixed with one uniform pseudo-trial.
fn parzen(bins: &[Bin]) -> Vec<f64> {
    let xs: Vec<f64> = bins.iter().filter_map(|b| if let Bin::Unit(u) = *b { Some(u) } else { None }).collect();
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let std = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    let mut sorted = xs.clone();
    sorted.sort_by(f64::total_cmp);
    let quantile = |q: f64| sorted[((q * (sorted.len() - 1) as f64).round() as usize).min(sorted.len() - 1)];
    let iqr = quantile(0.75) - quantile(0.25);
    let spread = if iqr > 0.0 { std.min(iqr / 1.34) } else { std };
    let h = (1.059 * spread * n.powf(-0.2)).max(1.0 / GRID as f64);
    let mut p = vec![0.0; GRID];
    for x in &xs {
        for (k, pk) in p.iter_mut().enumerate() {
            let z = ((k as f64 + 0.5) / GRID as f64 - x) / h;
            *pk += (-0.5 * z * z).exp();
        }
    }
    let sum: f64 = p.iter().sum();
    p.iter().map(|pk| (n * pk / sum.max(f64::MIN_POSITIVE) + 1.0 / GRID as f64) / (n + 1.0)).collect()
}

/// The Pearson divergence of `top` from `all`: `Σ all · (top / all − 1)²`.
fn pearson(top: &[f64], all: &[f64]) -> f64 {
    top.iter().zip(all).map(|(t, a)| if *a > 0.0 { a * (t / a - 1.0).powi(2) } else { 0.0 }).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::designer::testing::fixtures;
    use crate::optimize::sobol::sobol_point;

    #[test]
    fn the_parameter_the_objective_depends_on_matters_most() {
        let space = fixtures::unit_cube(3);
        let points: Vec<Assignment> = (0..400).map(|i| space.decode(&sobol_point(i, 3, 7))).collect();
        let x = |a: &Assignment, id: &str| match a.get(id) {
            Some(ParamValue::Float(v)) => *v,
            _ => unreachable!(),
        };
        let obs: Vec<(&Assignment, f64)> = points.iter().map(|a| (a, (x(a, "x0") - 0.3).powi(2) + 0.002 * x(a, "x1"))).collect();
        let imp = ped_anova(&space, &obs, Goal::Minimize).unwrap();
        assert_eq!(imp.iter().map(|p| p.parameter_id.as_str()).collect::<Vec<_>>(), ["x0", "x1", "x2"]);
        assert!(imp[0].importance > 0.9, "{imp:?}");
        // Importance is local to the best trials: a term too small to matter elsewhere, which
        // decides among them, matters there.
        let local: Vec<(&Assignment, f64)> = points.iter().map(|a| (a, (x(a, "x0") - 0.3).powi(2) + 0.05 * x(a, "x1"))).collect();
        let local = ped_anova(&space, &local, Goal::Minimize).unwrap();
        assert!(local[1].importance > 0.2 && local[2].importance < 0.05, "{local:?}");
        assert!((imp.iter().map(|p| p.importance).sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(imp[0].top_trials, 40);
        // Maximising the same values turns the question around, not the answer's shape.
        let max = ped_anova(&space, &obs, Goal::Maximize).unwrap();
        assert!(max[0].importance > 0.5, "{max:?}");
        assert!(ped_anova(&space, &obs[..3], Goal::Minimize).is_none());
    }

    #[test]
    fn a_conditional_parameter_is_judged_where_it_is_active() {
        // optimizer ∈ {sgd, adam}; momentum only under sgd. The objective is best for adam and,
        // under sgd, for momentum near 0.9.
        let space = fixtures::optimizer_tree();
        let d = space.n_params();
        let points: Vec<Assignment> = (0..300).map(|i| space.decode(&sobol_point(i, d, 11))).collect();
        let value = |a: &Assignment| {
            let adam = matches!(a.get("optimizer"), Some(ParamValue::Categorical(s)) if &**s == "adam");
            let m = match a.get("momentum") {
                Some(ParamValue::Float(v)) => *v,
                _ => 0.0,
            };
            if adam { 0.0 } else { 1.0 + (m - 0.9).abs() }
        };
        let obs: Vec<(&Assignment, f64)> = points.iter().map(|a| (a, value(a))).collect();
        let imp = ped_anova(&space, &obs, Goal::Minimize).unwrap();
        let of = |id: &str| imp.iter().find(|p| p.parameter_id == id).unwrap();
        assert!(of("optimizer").importance > 0.3, "{imp:?}");
        assert!(of("momentum").trials < 300 && of("momentum").trials > 100, "judged on the sgd trials only: {imp:?}");
    }
}
