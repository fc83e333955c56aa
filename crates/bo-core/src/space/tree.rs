//! The conditional space as the tree the structured models need (Ma & Blaschko 2020 §3):
//! **vertices** holding the parameters that become active under the same
//! condition, and **patterns** — one choice for every reachable branching parameter, the
//! generalisation of a root-to-leaf path when one level has several branching parameters.
//!
//! - The root vertex holds the unconditional parameters (it may be empty).
//! - A *branching* parameter is one with conditional children. Each distinct set of parent
//!   values among its children is a vertex, active iff the parent is active with one of those
//!   values; it holds the children without children of their own, and the children that branch
//!   further live in it.
//! - A CATEGORICAL branching parameter also gets one vertex per value (reused when a child group
//!   lists exactly that value): the paper's tree has an edge and a child per value, and
//!   without a term per branch leaves that differ only by a categorical choice are
//!   indistinguishable to the GP. The value itself is then no variable.
//! - An INTEGER or DISCRETE branching parameter stays a numeric variable of its vertex (its
//!   value is a quantity), and its values are grouped by the child groups they activate.
//!
//! Every feasible assignment has exactly one pattern, computed from the assignment alone
//! ([`Tree::active`]); inactive parameters never enter a structured kernel.
//!
//! Must not know about kernels or trials' outcomes.

use super::{Domain, ParamSpec, ParentValues, SearchSpace};
use crate::trial::{Assignment, ParamValue};

/// When a vertex is active.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    /// The branching parameter (index in [`SearchSpace::params`]' pre-order).
    pub param: usize,
    /// Its values that activate the vertex.
    pub values: ParentValues,
}

/// A vertex of the tree.
#[derive(Clone, Debug, PartialEq)]
pub struct Vertex {
    /// `None` for the root.
    pub condition: Option<Condition>,
    /// The vertex the condition's parameter lives in (`None` for the root).
    pub parent: Option<usize>,
    /// Parameters modelled at this vertex (pre-order indices): its plain children, and numeric
    /// branching parameters.
    pub params: Vec<usize>,
    /// A readable name: `root`, or `x1=0`, `x1∈{0,1}`.
    pub name: String,
}

/// One choice per reachable branching parameter: a root-to-leaf path of Ma & Blaschko 2020 when the
/// space is a strict tree.
#[derive(Clone, Debug, PartialEq)]
pub struct Pattern {
    /// For each branching parameter on the pattern (pre-order index), the values it may take on
    /// it — one for a CATEGORICAL, those that activate the same child groups for a number.
    pub choices: Vec<(usize, Vec<ParamValue>)>,
    /// Which vertices are active.
    pub active: Vec<bool>,
}

/// The tree of a search space.
#[derive(Clone, Debug)]
pub struct Tree {
    vertices: Vec<Vertex>,
    /// Per pre-order parameter: the vertex whose variables include it (`None` for CATEGORICAL
    /// branching parameters, which only select).
    home: Vec<Option<usize>>,
    /// Per pre-order parameter: the vertex under whose condition it is active.
    lives: Vec<usize>,
    params: Vec<ParamSpec>,
}

impl Tree {
    /// The tree of `space`.
    pub fn new(space: &SearchSpace) -> Tree {
        let params: Vec<ParamSpec> = space.params().into_iter().cloned().collect();
        let index = |id: &str| space.position(id).expect("a parameter of the space");
        let mut tree = Tree {
            vertices: vec![Vertex { condition: None, parent: None, params: vec![], name: "root".into() }],
            home: vec![None; params.len()],
            lives: vec![0; params.len()],
            params: params.clone(),
        };
        for root in space.roots() {
            tree.place(root, 0, &index);
        }
        tree
    }

    /// Adds `p` (and its subtree) with `p` living in vertex `at`.
    fn place(&mut self, p: &ParamSpec, at: usize, index: &dyn Fn(&str) -> usize) {
        let i = index(&p.id);
        let categorical = matches!(p.domain, Domain::Categorical { .. });
        self.lives[i] = at;
        if !categorical || p.children.is_empty() {
            self.home[i] = Some(at);
            self.vertices[at].params.push(i);
        }
        if p.children.is_empty() {
            return;
        }
        let mut groups: Vec<(ParentValues, usize)> = Vec::new();
        if let Domain::Categorical { values } = &p.domain {
            for v in values {
                let cond = ParentValues::Categorical(vec![v.clone()]);
                let vertex = self.add_vertex(i, cond.clone(), at, format!("{}={v}", p.id));
                groups.push((cond, vertex));
            }
        }
        for child in &p.children {
            let vertex = match groups.iter().find(|(cond, _)| same_values(cond, &child.parent_values)) {
                Some((_, v)) => *v,
                None => {
                    let name = format!("{}∈{}", p.id, describe(&child.parent_values));
                    let v = self.add_vertex(i, child.parent_values.clone(), at, name);
                    groups.push((child.parent_values.clone(), v));
                    v
                }
            };
            self.place(&child.spec, vertex, index);
        }
    }

    fn add_vertex(&mut self, param: usize, values: ParentValues, parent: usize, name: String) -> usize {
        self.vertices.push(Vertex { condition: Some(Condition { param, values }), parent: Some(parent), params: vec![], name });
        self.vertices.len() - 1
    }

    /// The vertices; the root is the first.
    pub fn vertices(&self) -> &[Vertex] {
        &self.vertices
    }

    /// The vertex whose variables include parameter `i` (pre-order), if any.
    pub fn home(&self, i: usize) -> Option<usize> {
        self.home[i]
    }

    /// Which vertices are active under `a`.
    pub fn active(&self, a: &Assignment) -> Vec<bool> {
        let mut active = vec![false; self.vertices.len()];
        active[0] = true;
        // Vertices are created parent first, so one pass in order sees each parent decided.
        for (k, v) in self.vertices.iter().enumerate().skip(1) {
            let (Some(c), Some(parent)) = (&v.condition, v.parent) else { continue };
            active[k] = active[parent] && a.get(&self.params[c.param].id).is_some_and(|value| c.values.matches(value));
        }
        active
    }

    /// Every pattern of the space, or `None` when there are more than `max`.
    pub fn patterns(&self, max: usize) -> Option<Vec<Pattern>> {
        // Partial patterns grow branching parameter by branching parameter, in pre-order, each
        // deciding the ones its active vertices make reachable.
        let mut done = Vec::new();
        let mut open = vec![Pattern { choices: vec![], active: self.root_only() }];
        while let Some(p) = open.pop() {
            let next = (0..self.params.len())
                .find(|&i| !self.params[i].children.is_empty() && p.active[self.lives[i]] && !p.choices.iter().any(|(j, _)| *j == i));
            let Some(i) = next else {
                done.push(p);
                if done.len() > max {
                    return None;
                }
                continue;
            };
            // Pushed in reverse so that they are taken in order: patterns come out in the order
            // of the values.
            for class in self.classes(i).into_iter().rev() {
                let mut q = p.clone();
                for (k, v) in self.vertices.iter().enumerate() {
                    if let Some(c) = &v.condition
                        && c.param == i
                    {
                        q.active[k] = c.values.matches(&class[0]);
                    }
                }
                q.choices.push((i, class));
                open.push(q);
            }
            if open.len() + done.len() > 4 * max {
                return None;
            }
        }
        Some(done)
    }

    fn root_only(&self) -> Vec<bool> {
        let mut a = vec![false; self.vertices.len()];
        a[0] = true;
        a
    }

    /// The values of branching parameter `i` grouped by the vertices they activate: each value
    /// of a CATEGORICAL; for a number, the values listed by its child groups, grouped by which
    /// groups list them, and one value that activates none (if there is one).
    fn classes(&self, i: usize) -> Vec<Vec<ParamValue>> {
        let p = &self.params[i];
        let conds: Vec<&ParentValues> = p.children.iter().map(|c| &c.parent_values).collect();
        let signature = |v: &ParamValue| conds.iter().map(|c| c.matches(v)).collect::<Vec<bool>>();
        let listed: Vec<ParamValue> = match &p.domain {
            Domain::Categorical { values } => return values.iter().map(|v| vec![ParamValue::categorical(v)]).collect(),
            Domain::Integer { .. } => {
                let mut v: Vec<i64> =
                    conds.iter().flat_map(|c| if let ParentValues::Integer(vs) = c { vs.clone() } else { vec![] }).collect();
                v.sort_unstable();
                v.dedup();
                v.into_iter().map(ParamValue::Int).collect()
            }
            Domain::Discrete { .. } => {
                let mut v: Vec<f64> =
                    conds.iter().flat_map(|c| if let ParentValues::Discrete(vs) = c { vs.clone() } else { vec![] }).collect();
                v.sort_by(f64::total_cmp);
                v.dedup();
                v.into_iter().map(ParamValue::Float).collect()
            }
            Domain::Double { .. } => vec![],
        };
        let mut classes: Vec<(Vec<bool>, Vec<ParamValue>)> = Vec::new();
        for v in listed.into_iter().filter(|v| p.domain.contains(v)) {
            let s = signature(&v);
            match classes.iter_mut().find(|(t, _)| *t == s) {
                Some((_, vs)) => vs.push(v),
                None => classes.push((s, vec![v])),
            }
        }
        let none = match &p.domain {
            Domain::Integer { min, max } => (*min..=*max)
                .take(classes.iter().map(|c| c.1.len()).sum::<usize>() + 1)
                .map(ParamValue::Int)
                .find(|v| signature(v).iter().all(|m| !m)),
            Domain::Discrete { values } => values.iter().map(|x| ParamValue::Float(*x)).find(|v| signature(v).iter().all(|m| !m)),
            _ => None,
        };
        let mut out: Vec<Vec<ParamValue>> = classes.into_iter().map(|(_, vs)| vs).collect();
        out.extend(none.map(|v| vec![v]));
        out
    }
}

/// Whether two conditions list the same values.
fn same_values(a: &ParentValues, b: &ParentValues) -> bool {
    match (a, b) {
        (ParentValues::Categorical(x), ParentValues::Categorical(y)) => {
            let (mut x, mut y) = (x.clone(), y.clone());
            x.sort();
            y.sort();
            x == y
        }
        (ParentValues::Integer(x), ParentValues::Integer(y)) => {
            let (mut x, mut y) = (x.clone(), y.clone());
            x.sort_unstable();
            y.sort_unstable();
            x == y
        }
        (ParentValues::Discrete(x), ParentValues::Discrete(y)) => {
            x.len() == y.len() && x.iter().all(|v| super::discrete_index(y, *v).is_some())
        }
        _ => false,
    }
}

fn describe(values: &ParentValues) -> String {
    let items: Vec<String> = match values {
        ParentValues::Categorical(v) => v.clone(),
        ParentValues::Integer(v) => v.iter().map(|x| x.to_string()).collect(),
        ParentValues::Discrete(v) => v.iter().map(|x| x.to_string()).collect(),
    };
    format!("{{{}}}", items.join(","))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::space::{Conditional, Scale};

    fn double(id: &str) -> ParamSpec {
        ParamSpec { id: id.into(), domain: Domain::Double { min: -1.0, max: 1.0 }, scale: Scale::Linear, default: None, children: vec![] }
    }

    fn categorical(id: &str, values: &[&str], children: Vec<Conditional>) -> ParamSpec {
        let values = values.iter().map(|v| (*v).to_owned()).collect();
        ParamSpec { id: id.into(), domain: Domain::Categorical { values }, scale: Scale::Linear, default: None, children }
    }

    fn under(values: &[&str], spec: ParamSpec) -> Conditional {
        Conditional { parent_values: ParentValues::Categorical(values.iter().map(|v| (*v).to_owned()).collect()), spec }
    }

    /// Ma & Blaschko 2020, §5.1's tree.
    pub(crate) fn jenatton() -> SearchSpace {
        let binary = |id: &str, children| categorical(id, &["0", "1"], children);
        SearchSpace::new(vec![binary(
            "x1",
            vec![
                under(&["0"], double("r8")),
                under(&["0"], binary("x2", vec![under(&["0"], double("x4")), under(&["1"], double("x5"))])),
                under(&["1"], double("r9")),
                under(&["1"], binary("x3", vec![under(&["0"], double("x6")), under(&["1"], double("x7"))])),
            ],
        )])
        .unwrap()
    }

    fn assignment(pairs: &[(&str, ParamValue)]) -> Assignment {
        Assignment::new(pairs.iter().map(|(k, v)| ((*k).into(), v.clone())).collect())
    }

    fn names(tree: &Tree, active: &[bool]) -> Vec<String> {
        tree.vertices().iter().zip(active).filter(|(_, a)| **a).map(|(v, _)| v.name.clone()).collect()
    }

    #[test]
    fn the_jenatton_space_is_seed_000s_tree() {
        let space = jenatton();
        let tree = Tree::new(&space);
        let ids: Vec<&str> = space.params().iter().map(|p| p.id.as_str()).collect();
        let vertex = |name: &str| tree.vertices().iter().find(|v| v.name == name).unwrap();
        let params = |name: &str| vertex(name).params.iter().map(|&i| ids[i]).collect::<Vec<_>>();
        assert_eq!(tree.vertices().len(), 7, "{:?}", tree.vertices());
        assert!(params("root").is_empty(), "the root has no continuous variable");
        assert_eq!(params("x1=0"), ["r8"]);
        assert_eq!(params("x1=1"), ["r9"]);
        assert_eq!(params("x2=0"), ["x4"]);
        assert_eq!(params("x3=1"), ["x7"]);
        let cat = |s: &str| ParamValue::Categorical(s.into());
        let a = assignment(&[("x1", cat("0")), ("x2", cat("1")), ("r8", ParamValue::Float(0.2)), ("x5", ParamValue::Float(0.1))]);
        assert_eq!(names(&tree, &tree.active(&a)), ["root", "x1=0", "x2=1"]);
        let patterns = tree.patterns(100).unwrap();
        assert_eq!(patterns.len(), 4, "{patterns:?}");
        let leaves: Vec<Vec<String>> = patterns.iter().map(|p| names(&tree, &p.active)).collect();
        assert_eq!(leaves[0], ["root", "x1=0", "x2=0"]);
        assert_eq!(leaves[3], ["root", "x1=1", "x3=1"]);
        assert_eq!(patterns[1].choices, vec![(0, vec![cat("0")]), (2, vec![cat("1")])]);
        assert!(tree.patterns(3).is_none(), "more than the cap");
    }

    #[test]
    fn numeric_parents_group_their_values_by_the_children_they_activate() {
        let int = |values: Vec<i64>, spec| Conditional { parent_values: ParentValues::Integer(values), spec };
        let n = ParamSpec {
            id: "n".into(),
            domain: Domain::Integer { min: 1, max: 5 },
            scale: Scale::Linear,
            default: None,
            children: vec![int(vec![1, 2], double("a")), int(vec![2], double("b"))],
        };
        let space = SearchSpace::new(vec![n, double("shared")]).unwrap();
        let tree = Tree::new(&space);
        assert_eq!(tree.vertices().len(), 3);
        assert_eq!(tree.vertices()[0].params, vec![0, 3], "the integer parent is a variable of the root, with `shared`");
        let patterns = tree.patterns(10).unwrap();
        let choices: Vec<&Vec<ParamValue>> = patterns.iter().map(|p| &p.choices[0].1).collect();
        assert_eq!(choices, [&vec![ParamValue::Int(1)], &vec![ParamValue::Int(2)], &vec![ParamValue::Int(3)]]);
        assert_eq!(patterns[1].active, [true, true, true]);
        assert_eq!(patterns[2].active, [true, false, false]);
        let a = assignment(&[("n", ParamValue::Int(4)), ("shared", ParamValue::Float(0.0))]);
        assert_eq!(tree.active(&a), [true, false, false]);
    }

    #[test]
    fn a_group_under_several_values_is_one_vertex_shared_by_them() {
        let space = SearchSpace::new(vec![categorical(
            "opt",
            &["sgd", "adam", "rmsprop"],
            vec![under(&["adam", "rmsprop"], double("beta")), under(&["sgd"], double("momentum"))],
        )])
        .unwrap();
        let tree = Tree::new(&space);
        let v: Vec<&str> = tree.vertices().iter().map(|v| v.name.as_str()).collect();
        assert_eq!(v, ["root", "opt=sgd", "opt=adam", "opt=rmsprop", "opt∈{adam,rmsprop}"]);
        let patterns = tree.patterns(10).unwrap();
        assert_eq!(patterns.len(), 3);
        assert_eq!(patterns[1].active, [true, false, true, false, true], "adam: its own offset and the shared beta");
    }
}
