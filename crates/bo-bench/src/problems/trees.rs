//! Conditional benchmark problems, all minimised:
//! Jenatton et al. (2017) (Ma & Blaschko 2020's benchmark; optimum 0.1) and a
//! smaller variant, Ma & Blaschko 2020's toy tree of Fig. 1, the three-level "jenatton3" of the authors' BoTorch port, a
//! deeper and wider tree shaped like Ma & Blaschko 2020's VGG16 pruning problem built from known additive
//! pieces, and Zhang, Hung, Lin & Liu's synthetic branching-and-nested function with its noise.

use bo_core::{Assignment, Conditional, Domain, ParamSpec, ParamValue, ParentValues, Scale, SearchSpace};

use super::problem::Problem;

fn double(id: &str, min: f64, max: f64) -> ParamSpec {
    ParamSpec { id: id.into(), domain: Domain::Double { min, max }, scale: Scale::Linear, default: None, children: vec![] }
}

fn categorical(id: &str, values: &[&str], children: Vec<Conditional>) -> ParamSpec {
    let values = values.iter().map(|v| (*v).to_owned()).collect();
    ParamSpec { id: id.into(), domain: Domain::Categorical { values }, scale: Scale::Linear, default: None, children }
}

fn under(value: &str, spec: ParamSpec) -> Conditional {
    Conditional { parent_values: ParentValues::Categorical(vec![value.into()]), spec }
}

fn num(a: &Assignment, id: &str) -> f64 {
    match a.get(id) {
        Some(ParamValue::Float(x)) => *x,
        other => panic!("{id} is {other:?}"),
    }
}

fn cat<'a>(a: &'a Assignment, id: &str) -> &'a str {
    match a.get(id) {
        Some(ParamValue::Categorical(s)) => s,
        other => panic!("{id} is {other:?}"),
    }
}

/// Ma & Blaschko 2020, Fig. 1 / eq. (3): `v_r ∈ [−1,1]²` shared, `t ∈ {1, 2}`, `v_p1 ∈ [−1,1]²` under
/// t = 1, `v_p2 ∈ [−1,1]³` under t = 2; `f = ‖v_r‖² + ‖v_leaf‖²`, minimum 0.
pub fn toy_space() -> SearchSpace {
    let leaf = |t: &str, d: usize| (0..d).map(|i| under(t, double(&format!("p{t}_{i}"), -1.0, 1.0))).collect::<Vec<_>>();
    SearchSpace::new(vec![
        double("r0", -1.0, 1.0),
        double("r1", -1.0, 1.0),
        categorical("t", &["1", "2"], [leaf("1", 2), leaf("2", 3)].concat()),
    ])
    .expect("valid")
}

/// The toy function.
pub fn toy(a: &Assignment) -> f64 {
    let t = cat(a, "t");
    let d = if t == "1" { 2 } else { 3 };
    num(a, "r0").powi(2) + num(a, "r1").powi(2) + (0..d).map(|i| num(a, &format!("p{t}_{i}")).powi(2)).sum::<f64>()
}

/// The levels of "jenatton3": three binary choices, a value in [0, 1] at every non-root vertex.
const J3_CHOICES: [[&str; 2]; 3] = [["A", "B"], ["1", "2"], ["a", "b"]];

/// "jenatton3": `f = 0.05 + 0.15·(Hamming distance of the path to A/1/a)
/// + Σ_{vertices on the path} (v − 0.3)²`, optimum 0.05.
pub fn jenatton3_space() -> SearchSpace {
    fn level(depth: usize, prefix: &str) -> Vec<Conditional> {
        J3_CHOICES[depth]
            .iter()
            .flat_map(|c| {
                let path = format!("{prefix}{c}");
                let mut out = vec![under(c, double(&format!("v{path}"), 0.0, 1.0))];
                if depth + 1 < J3_CHOICES.len() {
                    out.push(under(c, categorical(&format!("c{path}"), &J3_CHOICES[depth + 1], level(depth + 1, &path))));
                }
                out
            })
            .collect()
    }
    SearchSpace::new(vec![categorical("c", &J3_CHOICES[0], level(0, ""))]).expect("valid")
}

/// The jenatton3 function.
pub fn jenatton3(a: &Assignment) -> f64 {
    let mut path = String::new();
    let mut f = 0.05;
    let mut choice = "c".to_owned();
    for (depth, best) in ["A", "1", "a"].iter().enumerate() {
        let c = cat(a, &choice).to_owned();
        if c != *best {
            f += 0.15;
        }
        path.push_str(&c);
        f += (num(a, &format!("v{path}")) - 0.3).powi(2);
        if depth + 1 < 3 {
            choice = format!("c{path}");
        }
    }
    f
}

/// Pruning methods per block in the VGG16-shaped tree.
const VGG_CHOICES: [&str; 2] = ["L1", "L2"];
/// The optimal method per block (blocks 2, 3, 4).
const VGG_BEST: [&str; 3] = ["L2", "L1", "L2"];

/// A tree shaped like Ma & Blaschko 2020 §5.3's VGG16 pruning space: the root has no
/// continuous variable; blocks 2–4 each choose a method (`L1`/`L2`) and every chosen vertex
/// holds 3 amounts in [0, 1] — depth 4, 8 paths, 14 vertices, 42 continuous parameters. Its
/// value is a sum of known pieces, one per vertex on the path: `w_b Σⱼ (xⱼ − cⱼ)²` with centres
/// from the vertex's position and weights 1, 0.6, 0.3 by block, plus 0.08 per block whose method
/// is not the optimal one (L2, L1, L2). Optimum 0 on the path L2/L1/L2 at the centres.
pub fn vgg16_tree_space() -> SearchSpace {
    fn level(block: usize, prefix: &str) -> Vec<Conditional> {
        VGG_CHOICES
            .iter()
            .flat_map(|m| {
                let path = format!("{prefix}{m}");
                let mut out: Vec<Conditional> = (0..3).map(|j| under(m, double(&format!("a{path}_{j}"), 0.0, 1.0))).collect();
                if block < 4 {
                    out.push(under(m, categorical(&format!("b{}{path}", block + 1), &VGG_CHOICES, level(block + 1, &path))));
                }
                out
            })
            .collect()
    }
    SearchSpace::new(vec![categorical("b2", &VGG_CHOICES, level(2, ""))]).expect("valid")
}

/// The centre of amount `j` at the vertex reached by `path` (deterministic, spread in [0.15, 0.85]).
pub(crate) fn vgg_centre(path: &str, j: usize) -> f64 {
    let h = path.bytes().fold(j as u64 * 7 + 3, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    0.15 + 0.7 * ((h % 1000) as f64 / 999.0)
}

/// The VGG16-shaped function.
pub fn vgg16_tree(a: &Assignment) -> f64 {
    let weights = [1.0, 0.6, 0.3];
    let mut path = String::new();
    let mut f = 0.0;
    let mut choice = "b2".to_owned();
    for block in 0..3 {
        let m = cat(a, &choice).to_owned();
        if m != VGG_BEST[block] {
            f += 0.08;
        }
        path.push_str(&m);
        f += weights[block] * (0..3).map(|j| (num(a, &format!("a{path}_{j}")) - vgg_centre(&path, j)).powi(2)).sum::<f64>();
        choice = format!("b{}{path}", block + 3);
    }
    f
}

/// Zhang, Hung, Lin & Liu, §3 eq. (7), negated to be minimised: `x1 ∈ [−10, 10]`,
/// `x2 ∈ [−5, 5]` shared; branching `z ∈ {1, 2}`; nested `v ∈ {1, 2, 3}` under z = 1 and
/// `v ∈ {1, 2}` under z = 2. `f = (v/2)e^{−(x1−c1)²} + (2/v)e^{−(x1−c2)²/10} + 1/(x2²+1)` with
/// (c1, c2) = (3 − 0.5v, 5 − v) for z = 1 and (−1 + v, 7 − v) for z = 2; maximum 5 at
/// (6, 0, 2, 1). Observations carry N(0, 0.2²) noise ([`BRANCHING_NESTED_NOISE`]).
pub fn branching_nested_space() -> SearchSpace {
    SearchSpace::new(vec![
        double("x1", -10.0, 10.0),
        double("x2", -5.0, 5.0),
        categorical(
            "z",
            &["1", "2"],
            vec![under("1", categorical("v1", &["1", "2", "3"], vec![])), under("2", categorical("v2", &["1", "2"], vec![]))],
        ),
    ])
    .expect("valid")
}

/// The observation noise of Zhang, Hung, Lin & Liu's synthetic function.
pub const BRANCHING_NESTED_NOISE: f64 = 0.2;

/// The branching-and-nested function, negated (noise-free).
pub fn branching_nested(a: &Assignment) -> f64 {
    let (x1, x2) = (num(a, "x1"), num(a, "x2"));
    let z = cat(a, "z");
    let v: f64 = cat(a, if z == "1" { "v1" } else { "v2" }).parse().expect("a number");
    let (c1, c2) = if z == "1" { (3.0 - 0.5 * v, 5.0 - v) } else { (-1.0 + v, 7.0 - v) };
    let z: f64 = z.parse().expect("a number");
    let f = (v / 2.0) * (-(x1 - c1).powi(2)).exp() + (2.0 / v) * (-(x1 - c2).powi(2) / 10.0).exp() + 1.0 / (x2 * x2 + 1.0) + z;
    -f
}

/// The authors' "jenatton-small": the Jenatton tree with every continuous
/// value in [0, 1] and `f = shared + (leaf − 0.5)² + {0.1, 0.2, 0.3, 0.4}` — x² replaced by
/// x²/4 — the scaling that reproduces Ma & Blaschko 2020's Fig. 4b. Optimum 0.1.
pub fn jenatton_small_space() -> SearchSpace {
    let binary = |id: &str, children| categorical(id, &["0", "1"], children);
    let unit = |id: &str| double(id, 0.0, 1.0);
    SearchSpace::new(vec![binary(
        "x1",
        vec![
            under("0", unit("r8")),
            under("0", binary("x2", vec![under("0", unit("x4")), under("1", unit("x5"))])),
            under("1", unit("r9")),
            under("1", binary("x3", vec![under("0", unit("x6")), under("1", unit("x7"))])),
        ],
    )])
    .expect("valid")
}

/// The jenatton-small function.
pub fn jenatton_small(a: &Assignment) -> f64 {
    let leaf = |id: &str| (num(a, id) - 0.5).powi(2);
    match (cat(a, "x1"), a.get("x2"), a.get("x3")) {
        ("0", Some(ParamValue::Categorical(s)), _) if &**s == "0" => num(a, "r8") + leaf("x4") + 0.1,
        ("0", _, _) => num(a, "r8") + leaf("x5") + 0.2,
        (_, _, Some(ParamValue::Categorical(s))) if &**s == "0" => num(a, "r9") + leaf("x6") + 0.3,
        _ => num(a, "r9") + leaf("x7") + 0.4,
    }
}

fn jenatton_space() -> SearchSpace {
    let double = |id: &str, min: f64, max: f64| ParamSpec {
        id: id.into(),
        domain: Domain::Double { min, max },
        scale: Scale::Linear,
        default: None,
        children: vec![],
    };
    let binary = |id: &str, children: Vec<Conditional>| ParamSpec {
        id: id.into(),
        domain: Domain::Categorical { values: vec!["0".into(), "1".into()] },
        scale: Scale::Linear,
        default: None,
        children,
    };
    let under = |value: &str, spec: ParamSpec| Conditional { parent_values: ParentValues::Categorical(vec![value.into()]), spec };
    SearchSpace::new(vec![binary(
        "x1",
        vec![
            under("0", double("r8", 0.0, 1.0)),
            under("0", binary("x2", vec![under("0", double("x4", -1.0, 1.0)), under("1", double("x5", -1.0, 1.0))])),
            under("1", double("r9", 0.0, 1.0)),
            under("1", binary("x3", vec![under("0", double("x6", -1.0, 1.0)), under("1", double("x7", -1.0, 1.0))])),
        ],
    )])
    .expect("the Jenatton space is valid")
}

fn jenatton(a: &Assignment) -> f64 {
    let cat = |id: &str| matches!(a.get(id), Some(ParamValue::Categorical(s)) if &**s == "1");
    let num = |id: &str| match a.get(id) {
        Some(ParamValue::Float(x)) => *x,
        other => panic!("{id} is {other:?}"),
    };
    match (cat("x1"), cat("x2"), cat("x3")) {
        (false, false, _) => num("x4").powi(2) + 0.1 + num("r8"),
        (false, true, _) => num("x5").powi(2) + 0.2 + num("r8"),
        (true, _, false) => num("x6").powi(2) + 0.3 + num("r9"),
        (true, _, true) => num("x7").powi(2) + 0.4 + num("r9"),
    }
}

/// The problems of this family.
pub fn problems() -> Vec<Problem> {
    vec![
        Problem { name: "jenatton", dim: 9, optimum: 0.1, space: jenatton_space, eval: jenatton, noise_sd: 0.0, graph: None, groups: None },
        Problem {
            name: "jenatton_small",
            dim: 9,
            optimum: 0.1,
            space: jenatton_small_space,
            eval: jenatton_small,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem { name: "addtree_toy", dim: 8, optimum: 0.0, space: toy_space, eval: toy, noise_sd: 0.0, graph: None, groups: None },
        Problem {
            name: "jenatton3",
            dim: 21,
            optimum: 0.05,
            space: jenatton3_space,
            eval: jenatton3,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
        Problem {
            name: "branching_nested_synthetic",
            dim: 5,
            optimum: -5.0,
            space: branching_nested_space,
            eval: branching_nested,
            noise_sd: BRANCHING_NESTED_NOISE,
            graph: None,
            groups: None,
        },
        Problem {
            name: "vgg16_tree",
            dim: 49,
            optimum: 0.0,
            space: vgg16_tree_space,
            eval: vgg16_tree,
            noise_sd: 0.0,
            graph: None,
            groups: None,
        },
    ]
}
