//! Mixed and categorical problems, all minimised, with integer and categorical parameters that
//! interact with the continuous ones (defined here; each optimum is exact):
//!
//! - `mixed_styblinski_tang8`: Styblinski–Tang in 8 dimensions, the first 4 coordinates INTEGER
//!   in [−5, 5] (best at −3), the other 4 DOUBLE in [−5, 5].
//! - `categorical_shift`: a CATEGORICAL `c` of 4 values, each moving the minimum of a quadratic
//!   in 3 DOUBLE parameters and lifting it by its own offset: only `c = "d"` reaches 0.
//! - `ackley_categorical`: Ackley-5 whose first 2 coordinates are CATEGORICAL choices among
//!   −2 … 2 (unordered to the optimiser) and the other 3 DOUBLE in [−5, 5].
//! - `integer_rosenbrock`: Rosenbrock-4 on INTEGER coordinates in [−5, 10] with 2 DOUBLE
//!   coordinates appended as a quadratic bowl around (0.3, 0.6) scaled by the integer part.

use bo_core::{Assignment, Domain, ParamSpec, ParamValue, Scale, SearchSpace};

use super::classic::{ackley, rosenbrock, styblinski_tang};
use super::problem::Problem;

fn param(id: String, domain: Domain) -> ParamSpec {
    ParamSpec { id, domain, scale: Scale::Linear, default: None, children: vec![] }
}

fn double(id: String, min: f64, max: f64) -> ParamSpec {
    param(id, Domain::Double { min, max })
}

fn integer(id: String, min: i64, max: i64) -> ParamSpec {
    param(id, Domain::Integer { min, max })
}

fn categorical(id: String, values: &[&str]) -> ParamSpec {
    param(id, Domain::Categorical { values: values.iter().map(|v| (*v).to_owned()).collect() })
}

fn space(params: Vec<ParamSpec>) -> SearchSpace {
    SearchSpace::new(params).expect("benchmark spaces are valid")
}

/// Parameter `x{i}` of `a` as a number (an integer's value, a categorical's label parsed).
fn x(a: &Assignment, i: usize) -> f64 {
    match a.get(&format!("x{i}")) {
        Some(ParamValue::Float(v)) => *v,
        Some(ParamValue::Int(v)) => *v as f64,
        Some(ParamValue::Categorical(s)) => s.parse().expect("numeric labels"),
        None => panic!("x{i} is missing"),
    }
}

fn xs(a: &Assignment, d: usize) -> Vec<f64> {
    (0..d).map(|i| x(a, i)).collect()
}

const SHIFTS: [(&str, [f64; 3], f64); 4] =
    [("a", [0.2, 0.8, 0.5], 0.6), ("b", [0.7, 0.3, 0.1], 0.3), ("c", [0.5, 0.5, 0.9], 0.15), ("d", [0.85, 0.15, 0.35], 0.0)];

fn categorical_shift(a: &Assignment) -> f64 {
    let Some(ParamValue::Categorical(c)) = a.get("c") else { panic!("c is missing") };
    let (_, centre, lift) = SHIFTS.iter().find(|(name, _, _)| *name == &**c).expect("a known value");
    lift + 4.0 * (0..3).map(|i| (x(a, i) - centre[i]).powi(2)).sum::<f64>()
}

fn integer_rosenbrock(a: &Assignment) -> f64 {
    let v = xs(a, 6);
    rosenbrock(&v[..4]) + (1.0 + v[0].abs()) * ((v[4] - 0.3).powi(2) + (v[5] - 0.6).powi(2))
}

/// The problems of this family.
pub fn problems() -> Vec<Problem> {
    vec![
        Problem {
            name: "mixed_styblinski_tang8",
            dim: 8,
            optimum: 4.0 * styblinski_tang(&[-3.0]) + 4.0 * -39.16616570377142,
            space: || {
                space((0..8).map(|i| if i < 4 { integer(format!("x{i}"), -5, 5) } else { double(format!("x{i}"), -5.0, 5.0) }).collect())
            },
            eval: |a| styblinski_tang(&xs(a, 8)),
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "categorical_shift",
            dim: 4,
            optimum: 0.0,
            space: || {
                let mut params = vec![categorical("c".into(), &["a", "b", "c", "d"])];
                params.extend((0..3).map(|i| double(format!("x{i}"), 0.0, 1.0)));
                space(params)
            },
            eval: categorical_shift,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "ackley_categorical",
            dim: 5,
            optimum: 0.0,
            space: || {
                space(
                    (0..5)
                        .map(|i| {
                            if i < 2 {
                                categorical(format!("x{i}"), &["-2", "-1", "0", "1", "2"])
                            } else {
                                double(format!("x{i}"), -5.0, 5.0)
                            }
                        })
                        .collect(),
                )
            },
            eval: |a| ackley(&xs(a, 5)),
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "integer_rosenbrock",
            dim: 6,
            optimum: 0.0,
            space: || {
                space((0..6).map(|i| if i < 4 { integer(format!("x{i}"), -5, 10) } else { double(format!("x{i}"), 0.0, 1.0) }).collect())
            },
            eval: integer_rosenbrock,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
    ]
}
