//! The history in a PostgreSQL database, shared by many machines: run ids come
//! from an identity column, each result is committed in its own transaction, and
//! migrations hold an advisory lock so that many oslab processes meeting a new
//! database make its schema once.
//!
//! The schema version is the one row of `oslab_schema`. Without TLS support built
//! in (plain connections only), a URL asking for `sslmode=require` is refused
//! rather than sent in clear.

use std::collections::HashMap;
use std::error::Error;
use std::str::FromStr;
use std::time::Duration;

use ::postgres::config::SslMode;
use ::postgres::error::SqlState;
use ::postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};
use ::postgres::{Client, Config, NoTls, Statement};
use bytes::BytesMut;

use crate::StoreError;
use crate::backend::{Backend, Dialect, Fault, Row, Sql, Value};

/// Held for the length of a migration's transaction ("OSLB").
const SCHEMA_LOCK: i64 = 0x4f53_4c42;

/// How long a connection attempt may take unless the URL says
/// (`connect_timeout=S`): an unreachable host is reported, not waited on for minutes.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) struct Postgres {
    client: Client,
    statements: HashMap<String, Statement>,
}

/// Connects to the database of `url` (shown to the user as `location`, with any
/// password hidden). The password may also come from `PGPASSWORD`, as with psql.
pub(crate) fn connect(url: &str, location: &str) -> Result<Postgres, StoreError> {
    let mut config = Config::from_str(url).map_err(|e| StoreError::BadUrl {
        location: location.to_string(),
        detail: e.to_string(),
    })?;
    if config.get_ssl_mode() == SslMode::Require {
        return Err(StoreError::BadUrl {
            location: location.to_string(),
            detail: "this oslab connects without TLS, and the URL requires it (sslmode=require)"
                .into(),
        });
    }
    if config.get_password().is_none()
        && let Some(p) = std::env::var_os("PGPASSWORD").filter(|p| !p.is_empty())
    {
        config.password(p.as_encoded_bytes());
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("oslab");
    }
    let client = config.connect(NoTls).map_err(|e| classify(location, e))?;
    Ok(Postgres {
        client,
        statements: HashMap::new(),
    })
}

/// The innermost cause: "Connection refused (os error 111)" rather than the
/// wrappers around it.
fn cause(e: &::postgres::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text = s.to_string();
        source = s.source();
    }
    text
}

/// Whether the error came from the connection itself (an I/O error) rather than
/// from what was sent or received over it.
fn lost_connection(e: &::postgres::Error) -> bool {
    let mut source = e.source();
    while let Some(s) = source {
        if s.is::<std::io::Error>() {
            return true;
        }
        source = s.source();
    }
    false
}

/// PostgreSQL's errors in the sentence a user needs.
pub(crate) fn classify(location: &str, e: ::postgres::Error) -> StoreError {
    let location = location.to_string();
    let Some(db) = e.as_db_error() else {
        if e.is_closed() || lost_connection(&e) {
            return StoreError::Unreachable {
                location,
                detail: format!("the connection failed: {}", cause(&e)),
            };
        }
        return StoreError::Other {
            location,
            detail: cause(&e),
        };
    };
    let code = db.code();
    let detail = if *code == SqlState::INVALID_PASSWORD
        || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
    {
        format!("the server refused the login: {}", db.message())
    } else if *code == SqlState::INSUFFICIENT_PRIVILEGE {
        format!(
            "the user may not do what oslab needs: {} (oslab creates its tables on first use)",
            db.message()
        )
    } else {
        db.message().to_string()
    };
    StoreError::Other { location, detail }
}

impl Postgres {
    fn statement(&mut self, sql: &str) -> Sql<Statement> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql)?;
        self.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }
}

fn refs(params: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

impl Backend for Postgres {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Sql<u64> {
        let s = self.statement(sql)?;
        Ok(self.client.execute(&s, &refs(params))?)
    }

    fn query(&mut self, sql: &str, params: &[Value]) -> Sql<Vec<Row>> {
        let s = self.statement(sql)?;
        let rows = self.client.query(&s, &refs(params))?;
        rows.iter()
            .map(|r| {
                (0..r.len())
                    .map(|i| r.try_get::<_, Value>(i))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Row)
                    .map_err(Fault::from)
            })
            .collect()
    }

    fn batch(&mut self, sql: &str) -> Sql<()> {
        Ok(self.client.batch_execute(sql)?)
    }

    fn begin(&mut self) -> Sql<()> {
        Ok(self.client.batch_execute("BEGIN")?)
    }

    fn exclusive(&mut self) -> Sql<()> {
        Ok(self
            .client
            .batch_execute(&format!("SELECT pg_advisory_xact_lock({SCHEMA_LOCK})"))?)
    }

    fn schema_version(&mut self) -> Sql<u32> {
        // The catalog itself, not to_regclass(): a name cached as missing before
        // this transaction waited for another one's migration would stay missing.
        let marked = self.client.query_one(
            "SELECT count(*) FROM pg_catalog.pg_class c
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = current_schema() AND c.relname = 'oslab_schema'",
            &[],
        )?;
        if marked.get::<_, i64>(0) == 0 {
            return Ok(0);
        }
        let row = self
            .client
            .query_opt("SELECT version FROM oslab_schema", &[])?;
        Ok(row.map_or(0, |r| r.get::<_, i32>(0).max(0) as u32))
    }

    fn set_schema_version(&mut self, version: u32) -> Sql<()> {
        // The schema changed under any statement prepared before.
        self.statements.clear();
        self.client.batch_execute(
            "CREATE TABLE IF NOT EXISTS oslab_schema (
                 one     INTEGER PRIMARY KEY DEFAULT 1 CHECK (one = 1),
                 version INTEGER NOT NULL
             )",
        )?;
        self.client.execute(
            "INSERT INTO oslab_schema (one, version) VALUES (1, $1)
             ON CONFLICT (one) DO UPDATE SET version = excluded.version",
            &[&(i32::try_from(version).unwrap_or(i32::MAX))],
        )?;
        Ok(())
    }

    fn holds_foreign_tables(&mut self) -> Sql<bool> {
        let row = self.client.query_one(
            "SELECT count(*) FROM pg_catalog.pg_class c
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'v', 'm', 'p', 'f')",
            &[],
        )?;
        Ok(row.get::<_, i64>(0) > 0 && self.schema_version()? == 0)
    }
}

impl ToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(i) => match *ty {
                Type::INT8 => i.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
                Type::FLOAT8 => (*i as f64).to_sql(ty, out),
                _ => Err(format!("an integer given for a parameter of type {ty}").into()),
            },
            Value::Real(f) => match *ty {
                Type::FLOAT8 => f.to_sql(ty, out),
                Type::FLOAT4 => (*f as f32).to_sql(ty, out),
                _ => Err(format!("a number given for a parameter of type {ty}").into()),
            },
            Value::Text(s) if <&str as ToSql>::accepts(ty) => s.as_str().to_sql(ty, out),
            Value::Text(_) => Err(format!("text given for a parameter of type {ty}").into()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl<'a> FromSql<'a> for Value {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Value, Box<dyn Error + Sync + Send>> {
        Ok(match *ty {
            Type::INT8 => Value::Int(i64::from_sql(ty, raw)?),
            Type::INT4 => Value::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT2 => Value::Int(i16::from_sql(ty, raw)?.into()),
            Type::BOOL => Value::Int(bool::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => Value::from(f64::from_sql(ty, raw)?),
            Type::FLOAT4 => Value::from(f64::from(f32::from_sql(ty, raw)?)),
            // The views' `time`: seconds since the epoch.
            Type::TIMESTAMPTZ | Type::TIMESTAMP => {
                let t = std::time::SystemTime::from_sql(ty, raw)?;
                Value::Real(match t.duration_since(std::time::UNIX_EPOCH) {
                    Ok(d) => d.as_secs_f64(),
                    Err(e) => -e.duration().as_secs_f64(),
                })
            }
            _ if <String as FromSql>::accepts(ty) => Value::Text(String::from_sql(ty, raw)?),
            _ => return Err(format!("a column of type {ty}, which oslab does not read").into()),
        })
    }

    fn from_sql_null(_: &Type) -> Result<Value, Box<dyn Error + Sync + Send>> {
        Ok(Value::Null)
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}
