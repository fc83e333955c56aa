//! Helpers every family shares: boxes of DOUBLE parameters `x0 … x{d−1}` and reading a point's
//! coordinates back.

use bo_core::{Assignment, Domain, ParamSpec, ParamValue, Scale, SearchSpace};

pub fn box_space(bounds: &[(f64, f64)]) -> SearchSpace {
    SearchSpace::new(
        bounds
            .iter()
            .enumerate()
            .map(|(i, (lo, hi))| ParamSpec {
                id: format!("x{i}"),
                domain: Domain::Double { min: *lo, max: *hi },
                scale: Scale::Linear,
                default: None,
                children: vec![],
            })
            .collect(),
    )
    .expect("benchmark spaces are valid")
}

/// The unit box `[0, 1]^d` with parameters `x0 … x{d−1}`.
pub fn unit_box(d: usize) -> SearchSpace {
    box_space(&vec![(0.0, 1.0); d])
}

pub fn coords(a: &Assignment, d: usize) -> Vec<f64> {
    (0..d)
        .map(|i| match a.get(&format!("x{i}")) {
            Some(ParamValue::Float(x)) => *x,
            other => panic!("x{i} is {other:?}"),
        })
        .collect()
}
