//! How much of an additive model's variation each term carries: the variance of each term's
//! posterior mean over quasi-random points of the space, as a share of their sum — for the
//! additive designers (Kandasamy et al. 2015's groups, Rolland et al. 2018's cliques, Ma & Blaschko 2020's tree vertices), the
//! exact decomposition that Sobol indices estimate for a black box. Overlapping terms covary;
//! the shares leave the covariances out.

use crate::optimize::sobol::sobol_point;
use crate::space::SearchSpace;
use crate::trial::Assignment;

/// One term's share.
#[derive(Clone, Debug, PartialEq)]
pub struct TermShare {
    /// The term's name (the parameters it covers, or its tree vertex).
    pub name: String,
    /// Its share of the summed variances (the shares sum to 1; all 0 when nothing varies).
    pub share: f64,
}

/// The share of each term of `f` (each term's values at the points given), over `n`
/// quasi-random points drawn with `seed`; `None` when `f` has no terms or a value is not finite.
pub fn term_shares(
    space: &SearchSpace,
    n: usize,
    seed: u64,
    f: impl Fn(&[Assignment]) -> Option<Vec<(String, Vec<f64>)>>,
) -> Option<Vec<TermShare>> {
    let d = space.n_params();
    let points: Vec<Assignment> = (0..n as u64).map(|j| space.decode(&sobol_point(j + 1, d, seed))).collect();
    let terms = f(&points)?;
    if terms.is_empty() || terms.iter().any(|(_, v)| v.len() != n || v.iter().any(|x| !x.is_finite())) {
        return None;
    }
    let variances: Vec<f64> = terms
        .iter()
        .map(|(_, v)| {
            let mean = v.iter().sum::<f64>() / n as f64;
            v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64
        })
        .collect();
    let total: f64 = variances.iter().sum();
    Some(
        terms
            .into_iter()
            .zip(variances)
            .map(|((name, _), v)| TermShare { name, share: if total > 0.0 { v / total } else { 0.0 } })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::designer::testing::fixtures;
    use crate::trial::ParamValue;

    #[test]
    fn a_term_that_varies_twice_as_much_has_four_times_the_share() {
        let space = fixtures::unit_cube(2);
        let x = |a: &Assignment, id: &str| match a.get(id) {
            Some(ParamValue::Float(v)) => *v,
            _ => unreachable!(),
        };
        let f = |points: &[Assignment]| {
            Some(vec![
                ("x0".to_owned(), points.iter().map(|a| 2.0 * x(a, "x0")).collect()),
                ("x1".to_owned(), points.iter().map(|a| x(a, "x1")).collect()),
            ])
        };
        let shares = term_shares(&space, 1024, 5, f).unwrap();
        assert!((shares[0].share - 0.8).abs() < 0.01 && (shares[1].share - 0.2).abs() < 0.01, "{shares:?}");
        assert!(term_shares(&space, 16, 5, |_| None).is_none());
        assert!(term_shares(&space, 16, 5, |_| Some(vec![])).is_none());
    }
}
