//! Statistics for measurements that come from a noisy, shared machine.
//!
//! Everything here is a pure function of its input (and of an explicit seed where
//! resampling is involved), so results are reproducible and testable on known data.
//!
//! - [`describe`]: location and spread (median, quantiles, MAD, mean, standard
//!   deviation, coefficient of variation).
//! - [`bootstrap`]: percentile bootstrap confidence interval of the median.
//! - [`outliers`]: modified Z-score outlier marking (Iglewicz and Hoaglin, 1993).
//! - [`permutation`]: two-sample permutation test on the difference of medians.
//! - [`summary`]: all of the above in one serialisable [`Summary`].
#![forbid(unsafe_code)]

pub mod bootstrap;
pub mod describe;
pub mod levels;
pub mod outliers;
pub mod permutation;
pub mod sawtooth;
pub mod summary;

pub use bootstrap::{BootstrapCi, median_ci};
pub use describe::{mad, mean, median, quantile, stddev};
pub use outliers::{OutlierRule, mark_outliers};
pub use summary::{NoiseVerdict, Summary, summarize};
