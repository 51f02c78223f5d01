//! A run's raw data on disk (`oslab run --save-raw DIR`), and judging it again
//! (`oslab judge FILE`): the plan, every raw sample and fact, and the environment
//! the run saw. JSON, gzip-compressed when large.

use std::io::Write;
use std::path::{Path, PathBuf};

use oslab_model::{Environment, Mode};
use oslab_sys::infile::{self, InputError};
use oslab_sys::outfile::OutputError;
use serde::{Deserialize, Serialize};

use crate::Recorded;
use crate::rawcheck;

/// The layout version of a raw file.
pub const RAW_VERSION: u32 = 1;
/// Files above this many bytes of JSON are compressed.
const COMPRESS_ABOVE: usize = 256 << 10;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawFile {
    pub oslab_raw: u32,
    pub oslab_version: String,
    pub experiment: String,
    pub mode: Mode,
    pub started_unix_s: f64,
    pub duration_s: f64,
    pub environment: Environment,
    /// Why the experiment measured nothing, when it was skipped.
    pub skipped: Option<String>,
    pub recorded: Recorded,
}

impl RawFile {
    /// The file name in a `--save-raw` folder: the experiment and when it started.
    pub fn file_name(&self) -> String {
        let stamp = oslab_sys::clock::rfc3339_utc(self.started_unix_s)
            .replace([':', '-'], "")
            .replace('.', "");
        format!("{}-{stamp}.raw.json", self.experiment)
    }

    /// Writes the file into `dir`, whole and atomically, with a temporary name
    /// nobody can plant ([`oslab_sys::outfile::write_whole`]); `.gz` is added
    /// when it is compressed.
    pub fn write_into(&self, dir: &Path) -> Result<PathBuf, OutputError> {
        let json = serde_json::to_vec(self).map_err(|e| OutputError(e.to_string()))?;
        let mut path = dir.join(self.file_name());
        let bytes = if json.len() > COMPRESS_ABOVE {
            path.set_extension("json.gz");
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            gz.write_all(&json)?;
            gz.finish()?
        } else {
            json
        };
        oslab_sys::outfile::write_whole(&path, &bytes)?;
        Ok(path)
    }

    /// Reads a raw file (`-`: standard input), compressed or not, at most `max`
    /// bytes before and after decompression; one sentence when it is not one.
    pub fn read(path: &Path, max: u64) -> Result<RawFile, InputError> {
        let bytes = infile::read_bounded(path, max)?;
        RawFile::from_bytes(bytes, &infile::display_name(path), max)
    }

    /// A raw file from its bytes, compressed or not (at most `max` bytes once
    /// decompressed); `name` names it in the sentence when it is not one.
    pub fn from_bytes(bytes: Vec<u8>, name: &str, max: u64) -> Result<RawFile, InputError> {
        let name = name.to_string();
        let json = infile::maybe_gunzip(bytes, &name, max)?;
        let f: RawFile = serde_json::from_slice(infile::skip_bom(&json)).map_err(|e| {
            InputError::wrong(
                &name,
                format!("is not an oslab raw file (oslab run --save-raw writes them): {e}"),
            )
        })?;
        if f.oslab_raw > RAW_VERSION {
            return Err(InputError::wrong(
                &name,
                format!(
                    "was written by a newer oslab (raw layout {}; this one reads up to {RAW_VERSION})",
                    f.oslab_raw
                ),
            ));
        }
        if let Some(raw) = &f.recorded.raw {
            rawcheck::no_negative_amounts(raw, "raw")
                .map_err(|why| InputError::wrong(&name, why))?;
        }
        Ok(f)
    }
}
