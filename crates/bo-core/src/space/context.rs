//! Contexts: slices of a space (Vertex's `SuggestTrialsRequest.contexts`), each a partial
//! assignment whose parameters a suggestion must take. A context names parameters of the space
//! with values of their domains, and a conditional parameter only under a parent value that
//! activates it, so a fixed parent selects its subtree. This module checks contexts and decodes
//! points of the cube with a context's values fixed; searching within one is the designers'
//! (`designer/context.rs`).

use super::SearchSpace;
use crate::field::FieldError;
use crate::trial::Assignment;

impl SearchSpace {
    /// Checks that `context` is a slice of the space: each parameter one of the space's, its
    /// value in its domain, and a conditional parameter's parent in the context with a value
    /// that activates it. Errors are paths under `parameters`, naming the parameter.
    pub fn check_context(&self, context: &Assignment) -> Result<(), FieldError> {
        for (id, value) in context.0.iter() {
            let Some(spec) = self.param(id) else {
                return Err(FieldError::new("parameters", format!("{id:?} is not a parameter of the study")));
            };
            if !spec.domain.contains(value) {
                return Err(FieldError::new(
                    "parameters",
                    format!("value {value} of {id:?} is not in its {} domain", spec.domain.type_name()),
                ));
            }
        }
        for parent in self.params() {
            for child in &parent.children {
                if context.get(&child.spec.id).is_none() {
                    continue;
                }
                match context.get(&parent.id) {
                    Some(v) if child.parent_values.matches(v) => {}
                    _ => {
                        return Err(FieldError::new(
                            "parameters",
                            format!(
                                "{:?} is conditional on {:?}: the context must also fix {:?} to a value that activates it",
                                child.spec.id, parent.id, parent.id
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The assignment at point `u` of the cube with `fixed`'s parameters at their values (a
    /// fixed parent activates the children its value selects, whose own values come from `u`
    /// unless fixed too). `fixed` must pass [`SearchSpace::check_context`].
    pub fn decode_fixed(&self, u: &[f64], fixed: &Assignment) -> Assignment {
        if fixed.0.is_empty() {
            return self.decode(u);
        }
        // The cube point with each fixed coordinate moved to its value's, so the tree below a
        // fixed parent follows it; then the fixed values set exactly (a coordinate does not
        // round-trip a DOUBLE to the last bit).
        let mut moved = u.to_vec();
        for (k, p) in self.params().iter().enumerate() {
            if let Some(v) = fixed.get(&p.id).and_then(|v| p.to_unit(v)) {
                moved[k] = v;
            }
        }
        let mut out = self.decode(&moved);
        for (id, v) in fixed.0.iter() {
            out.insert(id.clone(), v.clone());
        }
        out
    }
}

impl Assignment {
    /// Whether this assignment takes every value `context` fixes.
    pub fn within(&self, context: &Assignment) -> bool {
        context.0.iter().all(|(id, v)| self.get(id) == Some(v))
    }
}

#[cfg(test)]
mod tests {
    use crate::designer::testing::fixtures;
    use crate::trial::{Assignment, ParamValue};

    fn ctx(pairs: &[(&str, ParamValue)]) -> Assignment {
        Assignment::new(pairs.iter().map(|(k, v)| ((*k).into(), v.clone())).collect())
    }

    /// A context names parameters of the space with values of their domains, and a child only
    /// under its parent's activating value; decoding with it fixed gives a feasible assignment
    /// within it, whose fixed parent chose the subtree.
    #[test]
    fn contexts_are_checked_and_fix_their_subtree() {
        let space = fixtures::optimizer_tree();
        let params: Vec<String> = space.params().iter().map(|p| p.id.clone()).collect();
        let root_with_children = space.roots().iter().find(|p| !p.children.is_empty()).expect("a conditional root");
        let child = &root_with_children.children[0];
        let activating = (0..1000)
            .map(|i| root_with_children.from_unit(i as f64 / 1000.0))
            .find(|v| child.parent_values.matches(v))
            .expect("some value activates the child");
        let other = (0..1000).map(|i| root_with_children.from_unit(i as f64 / 1000.0)).find(|v| !child.parent_values.matches(v));
        assert!(space.check_context(&ctx(&[("nope", ParamValue::Float(0.5))])).unwrap_err().reason.contains("not a parameter"));
        let child_value = child.spec.from_unit(0.25);
        let orphan = space.check_context(&ctx(&[(&child.spec.id, child_value.clone())])).unwrap_err();
        assert!(orphan.reason.contains("conditional on"), "{orphan:?}");
        if let Some(other) = &other {
            assert!(space.check_context(&ctx(&[(&root_with_children.id, other.clone()), (&child.spec.id, child_value.clone())])).is_err());
        }
        let context = ctx(&[(&root_with_children.id, activating.clone()), (&child.spec.id, child_value.clone())]);
        space.check_context(&context).unwrap();
        for i in 0..50u64 {
            let u = crate::optimize::sobol::sobol_point(i, params.len(), 3);
            let a = space.decode_fixed(&u, &context);
            space.check(&a).unwrap_or_else(|e| panic!("{a:?}: {e:?}"));
            assert!(a.within(&context), "{a:?}");
        }
        let parent_only = ctx(&[(&root_with_children.id, activating)]);
        let a = space.decode_fixed(&crate::optimize::sobol::sobol_point(7, params.len(), 3), &parent_only);
        assert!(a.get(&child.spec.id).is_some(), "the fixed parent activates its child: {a:?}");
    }
}
