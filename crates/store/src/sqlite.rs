//! The history in one SQLite file, in WAL mode: readers never wait for the writer,
//! and a run killed at any point leaves every committed result intact.
//!
//! `PRAGMA user_version` holds the schema version; `PRAGMA application_id` marks
//! the file as oslab's, so a foreign SQLite file is refused instead of written into.

use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::StoreError;
use crate::backend::{Backend, Dialect, Row, Sql, Value};

/// "OSLB": written into the SQLite header of every results database.
pub const APPLICATION_ID: i32 = 0x4f53_4c42;

pub(crate) struct Sqlite {
    conn: Connection,
}

/// Opens (`create`: or makes) the file, checking that it is oslab's before
/// anything is written into it.
pub(crate) fn open(path: &Path, create: bool) -> Result<Sqlite, StoreError> {
    let location = path.display().to_string();
    if path.is_dir() {
        return Err(StoreError::Other {
            location,
            detail: "it is a directory; give a file name".into(),
        });
    }
    if !create && !path.exists() {
        return Err(StoreError::Missing(location));
    }
    // no folder is made here: the caller makes and checks the folders a
    // database lives in (a folder made by path could be made through a link)
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        return Err(if create {
            StoreError::Other {
                location,
                detail: format!("its folder {} does not exist", dir.display()),
            }
        } else {
            StoreError::Missing(location)
        });
    }
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let err = |e: rusqlite::Error| classify(&location, e);
    let conn = Connection::open_with_flags(path, flags).map_err(err)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
    let app_id: i32 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(err)?;
    if app_id != 0 && app_id != APPLICATION_ID {
        return Err(StoreError::Foreign(location));
    }
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(err)?;
    retry_while_busy(|| conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())))
        .map_err(err)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(err)?;
    Ok(Sqlite { conn })
}

/// How long a connection waits for another process's lock before it gives up.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs `f` again while SQLite says the database is busy, up to [`BUSY_TIMEOUT`].
/// Turning a new file to WAL needs an exclusive lock that SQLite takes without
/// calling the busy handler, so two processes making one history at once would
/// otherwise see "database is locked" at once.
fn retry_while_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match f() {
            Err(e)
                if matches!(
                    e.sqlite_error_code(),
                    Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
                ) && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

fn value_of(v: ValueRef) -> Value {
    match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(f) => Value::Real(f),
        ValueRef::Text(t) | ValueRef::Blob(t) => Value::Text(String::from_utf8_lossy(t).into()),
    }
}

fn bound(params: &[Value]) -> Vec<rusqlite::types::Value> {
    use rusqlite::types::Value as V;
    params
        .iter()
        .map(|p| match p {
            Value::Null => V::Null,
            Value::Int(i) => V::Integer(*i),
            Value::Real(f) => V::Real(*f),
            Value::Text(s) => V::Text(s.clone()),
        })
        .collect()
}

impl Backend for Sqlite {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Sql<u64> {
        let n = self
            .conn
            .prepare_cached(sql)?
            .execute(rusqlite::params_from_iter(bound(params)))?;
        Ok(n as u64)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Sql<Vec<Row>> {
        let mut stmt = self.conn.prepare_cached(sql)?;
        let columns = stmt.column_count();
        let rows = stmt
            .query_map(rusqlite::params_from_iter(bound(params)), |r| {
                (0..columns)
                    .map(|i| r.get_ref(i).map(value_of))
                    .collect::<rusqlite::Result<Vec<_>>>()
                    .map(Row)
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(rows)
    }

    fn batch(&mut self, sql: &str) -> Sql<()> {
        Ok(self.conn.execute_batch(sql)?)
    }

    fn begin(&mut self) -> Sql<()> {
        // IMMEDIATE takes the write lock now (waiting up to the busy timeout), so a
        // transaction that reads before it writes never fails halfway for a lock.
        self.batch("BEGIN IMMEDIATE")
    }

    fn exclusive(&mut self) -> Sql<()> {
        Ok(()) // BEGIN IMMEDIATE already excludes every other writer.
    }

    fn schema_version(&mut self) -> Sql<u32> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    fn set_schema_version(&mut self, version: u32) -> Sql<()> {
        self.conn.pragma_update(None, "user_version", version)?;
        self.conn
            .pragma_update(None, "application_id", APPLICATION_ID)?;
        Ok(())
    }

    fn holds_foreign_tables(&mut self) -> Sql<bool> {
        // One statement, so one snapshot: read apart, another process's first
        // migration could commit between the two and its tables look foreign.
        let (app_id, objects): (i32, i64) = self.conn.query_row(
            "SELECT (SELECT application_id FROM pragma_application_id()),
                    (SELECT count(*) FROM sqlite_master)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok(app_id != APPLICATION_ID && objects != 0)
    }
}

/// Turns SQLite's error codes into the sentence a user needs.
pub(crate) fn classify(location: &str, e: rusqlite::Error) -> StoreError {
    let location = location.to_string();
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => StoreError::NotSqlite(location),
        Some(ErrorCode::DatabaseCorrupt) => StoreError::Damaged {
            location,
            detail: "SQLite reports the file as malformed".into(),
        },
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Other {
            location,
            detail: "another process holds it locked".into(),
        },
        Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => {
            StoreError::Other {
                location,
                detail: format!("cannot open it for writing ({e})"),
            }
        }
        _ => StoreError::Other {
            location,
            detail: e.to_string(),
        },
    }
}
