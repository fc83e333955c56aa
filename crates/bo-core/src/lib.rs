//! bo-core: the pure part of bo — search spaces, trials, studies and the optimisation
//! algorithms that propose new trials.
//!
//! Invariant: no I/O, no async, no database, no clock and no global random generator. Time
//! arrives as arguments (milliseconds since the epoch) and randomness as a `&mut dyn Rng`, so the
//! same inputs and seed always give the same output — also where a step uses scoped threads
//! (`optimize::mixed`), whose results are merged in an order that does not depend on how many
//! there are. This crate is an API boundary: `bo-store`
//! persists its data types and `bo-server` translates them to and from the Vertex wire JSON; it
//! knows nothing of either.
#![warn(missing_docs)]

pub mod acquisition;
pub mod designer;
pub mod embedding;
pub mod field;
pub mod gp;
pub mod hypervolume;
pub mod importance;
pub mod kernel;
pub mod lifecycle;
pub mod limits;
pub mod linalg;
pub mod optimal;
pub mod optimize;
pub mod pace;
pub mod packed;
pub mod space;
pub mod stopping;
pub mod structure;
pub mod study;
pub mod study_stopping;
pub mod trial;

pub use designer::{ALGORITHMS, ConfigError, Designer, FitError, Fitted, Model, ModelState, Prediction, Problem};
pub use field::FieldError;
pub use lifecycle::{Completion, TrialError};
pub use limits::{Limit, Limits};
pub use packed::PackedTrials;
pub use space::{Conditional, Domain, ParamSpec, ParentValues, Scale, SearchSpace};
pub use stopping::spec::{ConvexStopping, StoppingSpec};
pub use study::{Goal, MeasurementSelection, MetricSpec, ObservationNoise, Safety, StudySpec, Transfer};
pub use trial::{Assignment, AssignmentKey, Measurement, Observation, Outcome, ParamId, ParamValue, Resumed, Trial, TrialState};
