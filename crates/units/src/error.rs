use std::fmt;

/// Why a text is not the size, rate or duration it should be. Each kind is its own
/// variant, so a caller can word the range or example it expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnitError {
    /// Not a number followed by a size unit.
    NotASize(String),
    /// A number followed by something other than K, M, G or T.
    UnknownSizeUnit(String),
    /// More bytes than a u64 holds.
    TooLarge(String),
    /// A size without `/s` (`40MiB`), or a rate per second per second.
    RateNeedsPerSecond(String),
    /// Not a size per second.
    NotARate(String),
    /// A number followed by something other than ns, us, ms or s.
    UnknownTimeUnit { text: String, unit: String },
    /// No finite number before the unit.
    NotADuration(String),
    /// A number other than 0 without a unit where one is required.
    DurationNeedsUnit(String),
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnitError::NotASize(t) => write!(f, "'{t}' is not a size such as 256MiB"),
            UnitError::UnknownSizeUnit(t) => {
                write!(f, "'{t}' has an unknown unit (use K, M, G or T)")
            }
            UnitError::TooLarge(t) => write!(f, "'{t}' is too large"),
            UnitError::RateNeedsPerSecond(t) => {
                write!(f, "'{t}' is not a rate such as 40MiB/s (a size needs /s)")
            }
            UnitError::NotARate(t) => write!(f, "'{t}' is not a rate such as 40MiB/s"),
            UnitError::UnknownTimeUnit { text, unit } => {
                write!(
                    f,
                    "'{text}' has an unknown unit '{unit}' (use ns, us, ms or s)"
                )
            }
            UnitError::NotADuration(t) => {
                write!(f, "'{t}' is not a duration such as 10ms or 1.5s")
            }
            UnitError::DurationNeedsUnit(t) => {
                write!(f, "'{t}' needs a unit: {t}ms or {t}s")
            }
        }
    }
}

impl std::error::Error for UnitError {}
