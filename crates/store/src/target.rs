//! Which database `--db` (or `OSLAB_DB`) names: an SQLite file, or a PostgreSQL
//! database given as a `postgres://` URL. Any other `scheme://` is refused, never
//! taken for a file name (which would make a folder called `scheme:`).

use std::ffi::OsStr;
use std::fmt;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    File(PathBuf),
    /// The URL as given, password included; shown only through [`redact`].
    Postgres(String),
}

/// A `scheme://` that names no database oslab can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{given}: '{scheme}://' is not a database oslab can use; give an SQLite file name or a postgres://USER@HOST/DBNAME URL"
)]
pub struct UnknownScheme {
    pub given: String,
    pub scheme: String,
}

const POSTGRES_SCHEMES: [&str; 2] = ["postgres", "postgresql"];

/// The scheme of `text` when it starts like a URL (RFC 3986: a letter, then
/// letters, digits, `+`, `-` or `.`, then `://`).
fn scheme_of(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic() && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)))
        .then_some(scheme)
}

impl Target {
    pub fn parse(given: &OsStr) -> Result<Target, UnknownScheme> {
        let Some(text) = given.to_str() else {
            return Ok(Target::File(PathBuf::from(given)));
        };
        match scheme_of(text) {
            None => Ok(Target::File(PathBuf::from(given))),
            Some(s) if POSTGRES_SCHEMES.contains(&s.to_ascii_lowercase().as_str()) => {
                Ok(Target::Postgres(text.to_string()))
            }
            Some(s) => Err(UnknownScheme {
                given: redact(text),
                scheme: s.to_string(),
            }),
        }
    }
}

impl From<&std::path::Path> for Target {
    fn from(p: &std::path::Path) -> Target {
        Target::File(p.to_path_buf())
    }
}

/// A file as its path, a URL without its password.
impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Target::File(p) => write!(f, "{}", p.display()),
            Target::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

/// `text` with the password of every URL in it (`user:PASSWORD@` or
/// `password=PASSWORD`) written `***`: for messages, and for the command line a run
/// stores.
pub fn redact(text: &str) -> String {
    text.split(' ')
        .map(redact_word)
        .collect::<Vec<_>>()
        .join(" ")
}

fn redact_word(word: &str) -> String {
    // The URL starts at the scheme before the first "://".
    let Some(colon) = word.find("://") else {
        return word.to_string();
    };
    let start = word[..colon]
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || "+-.".contains(c)))
        .map_or(0, |i| i + 1);
    let (before, url) = word.split_at(start);
    let body_at = url.find("://").map_or(0, |i| i + 3);
    let (scheme, body) = url.split_at(body_at);
    let authority_end = body.find(['/', '?']).unwrap_or(body.len());
    let (authority, rest) = body.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:***@{host}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let rest = match rest.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => kv.to_string(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => rest.to_string(),
    };
    format!("{before}{scheme}{authority}{rest}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Target, UnknownScheme> {
        Target::parse(OsStr::new(s))
    }

    #[test]
    fn files_urls_and_unknown_schemes() {
        assert_eq!(
            parse("results.db").unwrap(),
            Target::File("results.db".into())
        );
        assert_eq!(
            parse("./a://b").unwrap(),
            Target::File("./a://b".into()),
            "not a scheme: starts with a dot"
        );
        assert!(matches!(
            parse("postgresql://u@h/db").unwrap(),
            Target::Postgres(_)
        ));
        assert!(matches!(
            parse("POSTGRES://u@h/db").unwrap(),
            Target::Postgres(_)
        ));
        let e = parse("mysql://root:pw@h/db").unwrap_err();
        assert_eq!(e.scheme, "mysql");
        let m = e.to_string();
        assert!(!m.contains("pw") && m.contains("'mysql://'"), "{m}");
    }

    #[test]
    fn passwords_never_show() {
        let t = parse("postgres://oslab:s3cret@db.example:5432/lab?sslmode=disable").unwrap();
        assert_eq!(
            t.to_string(),
            "postgres://oslab:***@db.example:5432/lab?sslmode=disable"
        );
        assert_eq!(
            redact("oslab run all --db=postgresql://u@h/db?password=x&application_name=y -q"),
            "oslab run all --db=postgresql://u@h/db?password=***&application_name=y -q"
        );
        assert_eq!(
            redact("oslab run --db postgres://u@%2Ftmp%2Fpg/db"),
            "oslab run --db postgres://u@%2Ftmp%2Fpg/db"
        );
        assert_eq!(redact("a b  c"), "a b  c");
    }
}
