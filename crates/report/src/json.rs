//! JSON output: the result set as pretty-printed, schema-versioned JSON.

use oslab_model::ResultSet;

/// The result set as JSON text with a trailing newline.
pub fn to_json(set: &ResultSet) -> String {
    let mut s = serde_json::to_string_pretty(set).expect("results serialise");
    s.push('\n');
    s
}

/// Parses results written by [`to_json`].
pub fn from_json(text: &str) -> Result<ResultSet, serde_json::Error> {
    serde_json::from_str(text)
}
