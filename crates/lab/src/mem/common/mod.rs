//! What the memory experiments share: the sizes to sweep and the pointer chase
//! of one size, and the unit tests' environment.

pub mod sweep;
#[cfg(test)]
pub mod test_env;
