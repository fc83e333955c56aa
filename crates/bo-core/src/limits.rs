//! The sizes a study may have: how long an id may be, how many parameters, values, metrics,
//! measurements and suggestions, and how much search work an `algorithmConfig` may ask of one
//! suggestion or one fit. A [`Limits`] value is the one home of these numbers; validation of a
//! space ([`crate::SearchSpace::with_limits`]), of a study's metrics and of a designer's settings
//! ([`crate::designer::check_limits`]) reads it, and a service checks its requests against it.
//!
//! Every refusal names the [`Limit`] it met, so the service can tell the user which of its
//! settings sets it. The defaults are chosen from measurements of the largest study they allow
//! (docs/journal/benchmarks.md, "The largest allowed study"): no honest study meets them, and the
//! largest one still creates, suggests and reads in well under a second.
//!
//! This module owns the numbers and their names; it must not know how a service configures them.

/// The largest id or counter a study may be given from outside (an imported `nextTrialId`, trial
/// id, `dataVersion`, space revision): 2^53, exact in a JSON number and so far below `i64::MAX`
/// that no counter a study then increments can overflow in any database.
pub const MAX_COUNTER: i64 = 1 << 53;

/// One limit: what is counted, and by which setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limit {
    /// Characters of an id or a name: parameter, metric and client ids, categorical values,
    /// display names, projects, locations.
    IdLength,
    /// Characters of a free text (a trial's infeasible reason).
    TextLength,
    /// Parameters in a study's tree, active or not.
    Parameters,
    /// Values of one CATEGORICAL or DISCRETE parameter, or of one parent-value condition.
    Values,
    /// Levels of conditional parameters under a root (a root alone is depth 1).
    TreeDepth,
    /// Metrics of a study (and so of one measurement).
    Metrics,
    /// Trials one suggest may ask for.
    SuggestionCount,
    /// Intermediate measurements of one trial.
    Measurements,
    /// Candidate coordinates scored per suggestion: `numCandidates` × the parameters they span.
    CandidateCoordinates,
    /// Marginal-likelihood evaluations one structure search may make (`gibbsBudget`;
    /// `numPartitions` + `swapsPerParameter` × parameters).
    StructureEvaluations,
}

impl Limit {
    /// Every limit, in the order the documentation lists them.
    pub const ALL: [Limit; 10] = [
        Limit::IdLength,
        Limit::TextLength,
        Limit::Parameters,
        Limit::Values,
        Limit::TreeDepth,
        Limit::Metrics,
        Limit::SuggestionCount,
        Limit::Measurements,
        Limit::CandidateCoordinates,
        Limit::StructureEvaluations,
    ];

    /// What the limit counts, in a message: "characters", "parameters".
    pub fn unit(self) -> &'static str {
        match self {
            Limit::IdLength | Limit::TextLength => "characters",
            Limit::Parameters => "parameters",
            Limit::Values => "values",
            Limit::TreeDepth => "levels",
            Limit::Metrics => "metrics",
            Limit::SuggestionCount => "trials",
            Limit::Measurements => "measurements",
            Limit::CandidateCoordinates => "candidate coordinates",
            Limit::StructureEvaluations => "likelihood evaluations",
        }
    }
}

/// The limits in force (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// [`Limit::IdLength`].
    pub id_length: usize,
    /// [`Limit::TextLength`].
    pub text_length: usize,
    /// [`Limit::Parameters`].
    pub parameters: usize,
    /// [`Limit::Values`].
    pub values: usize,
    /// [`Limit::TreeDepth`].
    pub tree_depth: usize,
    /// [`Limit::Metrics`].
    pub metrics: usize,
    /// [`Limit::SuggestionCount`].
    pub suggestion_count: usize,
    /// [`Limit::Measurements`].
    pub measurements: usize,
    /// [`Limit::CandidateCoordinates`].
    pub candidate_coordinates: usize,
    /// [`Limit::StructureEvaluations`].
    pub structure_evaluations: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            id_length: 128,
            text_length: 1000,
            parameters: 300,
            values: 1000,
            tree_depth: 8,
            metrics: 20,
            suggestion_count: 100,
            measurements: 1000,
            candidate_coordinates: 300_000,
            structure_evaluations: 10_000,
        }
    }
}

impl Limits {
    /// The value of `limit`.
    pub fn get(&self, limit: Limit) -> usize {
        match limit {
            Limit::IdLength => self.id_length,
            Limit::TextLength => self.text_length,
            Limit::Parameters => self.parameters,
            Limit::Values => self.values,
            Limit::TreeDepth => self.tree_depth,
            Limit::Metrics => self.metrics,
            Limit::SuggestionCount => self.suggestion_count,
            Limit::Measurements => self.measurements,
            Limit::CandidateCoordinates => self.candidate_coordinates,
            Limit::StructureEvaluations => self.structure_evaluations,
        }
    }

    /// `Err` when `found` is over `limit`: what was found, the most allowed and which limit.
    pub fn check(&self, limit: Limit, found: usize) -> Result<(), OverLimit> {
        let max = self.get(limit);
        if found <= max { Ok(()) } else { Err(OverLimit { limit, found, max }) }
    }

    /// Checks a text field: at most [`Limit::IdLength`] (or, for free `text`,
    /// [`Limit::TextLength`]) characters, and no control characters — free text may hold tabs
    /// and line breaks. `Err` names what is wrong (the caller adds the field).
    pub fn check_text(&self, value: &str, kind: Text) -> Result<(), TextError> {
        let limit = match kind {
            Text::Id | Text::Token | Text::Name => Limit::IdLength,
            Text::Free => Limit::TextLength,
        };
        // Counting characters stops at the limit: a megabyte is refused as fast as 129 bytes.
        let max = self.get(limit);
        if value.len() > max && value.chars().nth(max).is_some() {
            return Err(TextError::Long(OverLimit { limit, found: value.chars().count(), max }));
        }
        let allowed = |c: char| kind == Text::Free && matches!(c, '\t' | '\n' | '\r');
        if let Some(c) = value.chars().find(|&c| c.is_control() && !allowed(c)) {
            return Err(TextError::Control(c));
        }
        if kind == Text::Token && value.chars().any(char::is_whitespace) {
            return Err(TextError::Whitespace);
        }
        if kind == Text::Name {
            if value.trim().is_empty() {
                return Err(TextError::Blank);
            }
            if let Some(c) = value.chars().find(|&c| is_invisible(c)) {
                return Err(TextError::Invisible(c));
            }
            if value.contains('/') && value.split('/').any(|s| matches!(s, "" | "." | "..")) {
                return Err(TextError::PathSegment);
            }
        }
        Ok(())
    }
}

/// The kinds of text [`Limits::check_text`] knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Text {
    /// A name or a value: no control characters, at most [`Limit::IdLength`].
    Id,
    /// An id that is also a token (parameter and metric ids): as `Id`, and no whitespace.
    Token,
    /// Free text: tabs and line breaks allowed, at most [`Limit::TextLength`].
    Free,
    /// A name people read and tell apart (a study's display name): as `Id`, not blank, no
    /// character that changes how the rest is shown without being seen (bidirectional
    /// controls, zero-width characters), and where it has `/`, no empty, `.` or `..` segment.
    Name,
}

/// Characters shown as nothing that change how text around them reads: the bidirectional
/// controls (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C) and the zero-width ones
/// (U+200B–U+200D, U+2060–U+2064, U+FEFF, U+180E).
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}' | '\u{061C}' | '\u{180E}')
}

/// A count over its limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{found} {unit}, at most {max} allowed", unit = limit.unit())]
pub struct OverLimit {
    /// Which limit.
    pub limit: Limit,
    /// What was found.
    pub found: usize,
    /// The most allowed.
    pub max: usize,
}

/// Why a text was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    /// Too long.
    #[error(transparent)]
    Long(OverLimit),
    /// It holds a control character (NUL, escape, …).
    #[error("control characters such as U+{:04X} are not allowed", u32::from(*.0))]
    Control(char),
    /// It holds whitespace where a token is expected.
    #[error("must not contain whitespace")]
    Whitespace,
    /// A name that is empty or only whitespace.
    #[error("required, and must not be blank")]
    Blank,
    /// A name holding a character shown as nothing.
    #[error("invisible characters such as U+{:04X} (bidirectional or zero-width) are not allowed in a name", u32::from(*.0))]
    Invisible(char),
    /// A name with an empty, `.` or `..` segment between slashes.
    #[error("must not have an empty, \".\" or \"..\" segment between slashes")]
    PathSegment,
}

impl TextError {
    /// The limit met, if the text was too long.
    pub fn limit(&self) -> Option<Limit> {
        match self {
            TextError::Long(o) => Some(o.limit),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_checked_for_length_control_characters_and_whitespace() {
        let limits = Limits { id_length: 4, text_length: 6, ..Limits::default() };
        assert!(limits.check_text("abcd", Text::Id).is_ok());
        assert!(limits.check_text("ééé", Text::Id).is_ok(), "characters, not bytes");
        assert_eq!(limits.check_text("abcde", Text::Id), Err(TextError::Long(OverLimit { limit: Limit::IdLength, found: 5, max: 4 })));
        assert_eq!(limits.check_text("a\0", Text::Id), Err(TextError::Control('\0')));
        assert_eq!(limits.check_text("a\u{85}", Text::Id), Err(TextError::Control('\u{85}')), "C1 controls too");
        assert_eq!(limits.check_text("a b", Text::Token), Err(TextError::Whitespace));
        assert!(limits.check_text("a b", Text::Id).is_ok());
        assert!(limits.check_text("a\nb\tc", Text::Free).is_ok());
        assert_eq!(limits.check_text("a\0", Text::Free), Err(TextError::Control('\0')));
        assert!(matches!(limits.check_text("abcdefg", Text::Free), Err(TextError::Long(_))));
    }

    #[test]
    fn a_name_is_visible_and_no_path() {
        let limits = Limits::default();
        for ok in ["resnet", "resnet/cifar-10", "a.b", "..a", "émoji 🎯", "x y"] {
            assert_eq!(limits.check_text(ok, Text::Name), Ok(()), "{ok}");
        }
        for (bad, error) in [
            (" ", TextError::Blank),
            ("", TextError::Blank),
            ("abc\u{202E}fdp.exe", TextError::Invisible('\u{202E}')),
            ("ad\u{200B}min", TextError::Invisible('\u{200B}')),
            ("\u{FEFF}x", TextError::Invisible('\u{FEFF}')),
            ("../../etc", TextError::PathSegment),
            ("/root", TextError::PathSegment),
            ("a//b", TextError::PathSegment),
            ("a/./b", TextError::PathSegment),
            ("a/", TextError::PathSegment),
        ] {
            assert_eq!(limits.check_text(bad, Text::Name), Err(error), "{bad:?}");
        }
        assert!(limits.check_text("ad\u{200B}min", Text::Id).is_ok(), "only names are held to it");
    }

    #[test]
    fn every_limit_reads_its_own_field() {
        let limits = Limits {
            id_length: 1000,
            text_length: 1001,
            parameters: 1002,
            values: 1003,
            tree_depth: 1004,
            metrics: 1005,
            suggestion_count: 1006,
            measurements: 1007,
            candidate_coordinates: 1008,
            structure_evaluations: 1009,
        };
        for (k, limit) in Limit::ALL.into_iter().enumerate() {
            assert_eq!(limits.get(limit), 1000 + k);
            assert_eq!(limits.check(limit, 1000 + k), Ok(()));
            assert!(limits.check(limit, 1001 + k).is_err());
        }
    }
}
