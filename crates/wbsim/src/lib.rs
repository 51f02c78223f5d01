//! wbsim: a discrete-event simulator of dirty-page write back.
//!
//! Writers dirty pages of their own files; the page cache keeps dirty bytes per
//! inode with the time it was first dirtied, charged to the writer's group; the
//! flusher runs the periodic (expiry) pass and background write back in chunks; the
//! kernel's throttling pauses writers (rate-based with the 200 ms cap on `linux-6`,
//! synchronous write back by the writer on `linux-2.6.26`); a device serves write
//! requests at a bandwidth with a per-request latency. Policies ([`policy`]) decide,
//! before a write proceeds, whether its group must wait: `vanilla` never, `wcall`
//! as the WCALL paper's Algorithm 1, `wcall-fair` as our improvement.
//!
//! Time is in integer nanoseconds; a run is deterministic for its configuration.
#![forbid(unsafe_code)]

pub mod bounds;
pub mod config;
pub mod engine;
pub mod kernel;
pub mod keys;
pub mod outcome;
pub mod policy;
pub mod profile;
pub mod rules;
pub mod scenario;
pub mod sets;
pub mod settings;
pub mod validate;

pub use config::{
    Class, Config, DeviceCfg, DeviceKind, GovernorCfg, Initial, Kind, RuleSet, Sysctls, WriterCfg,
};
pub use engine::simulate;
pub use outcome::{Outcome, WriterResult};
pub use policy::Policy;
