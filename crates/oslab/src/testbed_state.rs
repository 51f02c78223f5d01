//! Which testbed `oslab testbed up` left up: read by `testbed` and `dirty advise
//! --testbed`.

use oslab_services::testbed::Testbed;
use oslab_sys::journal::named_dir;

pub const NAME: &str = "testbed";

/// Beside the testbed's journal, wherever that is.
pub fn state_path() -> std::path::PathBuf {
    named_dir(NAME).join("testbed.json")
}

/// The testbed left up by `oslab testbed up`, if any.
pub fn current() -> Option<Testbed> {
    serde_json::from_str(&std::fs::read_to_string(state_path()).ok()?).ok()
}
