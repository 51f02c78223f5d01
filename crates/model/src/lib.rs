//! The data oslab's outputs read: the one result model, and the plain data
//! other crates fill for them.
//!
//! Every experiment returns an [`ExperimentResult`]; the same value is serialised to
//! JSON (see `docs/results-json.md`), CSV and the database, and rendered to tables,
//! SVG plots and HTML. Units are in field names (`median` of a measurement is in the
//! measurement's `unit`; `duration_s`, `size_bytes`, ...).
#![forbid(unsafe_code)]

mod claim;
pub mod compare;
pub mod governor;
pub mod machine;
mod plot;
mod result;
pub mod system;
pub mod trace;
pub mod usual;

pub use claim::{Claim, Tolerance, Verdict};
pub use machine::MachineInfo;
pub use plot::{Axis, Marker, Plot, Scale, Series, SeriesStyle};
pub use result::{
    Environment, ExperimentResult, Finding, LoadRecord, Measurement, Mode, Params, ResultSet,
    SCHEMA_VERSION, Status,
};
pub use system::SarRecord;
