//! A PostgreSQL connection as the workloads use it ([`crate::client::connection::Session`]): rust-postgres
//! prepared statements (`?` placeholders numbered `$1`, `$2`… here; integers sent at the
//! width the server gave the parameter), rows discarded, BEGIN and COMMIT prepared as
//! pgbench -M prepared does, the simple protocol for the user's statements. Driver errors
//! become `DbError`s here.

use super::clean_error;
use crate::client::connection::{DbError, Kind, Session, Stmt, Value};
use bytes::BytesMut;

/// Makes every later transaction of a session read-only (default_transaction_read_only).
pub const READ_ONLY: &str = "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY";
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};

/// A driver error as the workloads see it.
pub fn db_error(e: postgres::Error) -> DbError {
    let kind = match e.code() {
        _ if e.as_db_error().is_none() => Kind::Lost,
        Some(c) if *c == postgres::error::SqlState::SYNTAX_ERROR => Kind::Syntax,
        _ => Kind::Refused,
    };
    DbError {
        message: clean_error(&e),
        kind,
    }
}

/// `?` placeholders outside quotes as `$1`, `$2`, …
pub fn number_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let (mut n, mut quote) = (0, None);
    for ch in sql.chars() {
        match quote {
            Some(q) if ch == q => quote = None,
            Some(_) => {}
            None if ch == '\'' || ch == '"' => quote = Some(ch),
            None if ch == '?' => {
                n += 1;
                out.push_str(&format!("${n}"));
                continue;
            }
            None => {}
        }
        out.push(ch);
    }
    out
}

impl ToSql for Value<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match *self {
            Value::Int(i) if *ty == Type::INT2 => i16::try_from(i)?.to_sql(ty, out),
            Value::Int(i) if *ty == Type::INT4 => i32::try_from(i)?.to_sql(ty, out),
            Value::Int(i) => i.to_sql(ty, out),
            Value::Text(s) => s.to_sql(ty, out),
            Value::Null => Ok(IsNull::Yes),
        }
    }

    fn accepts(ty: &Type) -> bool {
        <i16 as ToSql>::accepts(ty)
            || <i32 as ToSql>::accepts(ty)
            || <i64 as ToSql>::accepts(ty)
            || <&str as ToSql>::accepts(ty)
    }

    to_sql_checked!();
}

/// One connection and the statements prepared on it.
pub struct PgSession {
    conn: postgres::Client,
    statements: Vec<postgres::Statement>,
    /// BEGIN and COMMIT, prepared at the first transaction.
    transaction: Option<(postgres::Statement, postgres::Statement)>,
}

impl PgSession {
    /// Open a connection with this configuration.
    pub fn connect(
        tls: Option<&super::tls::Tls>,
        config: &postgres::Config,
    ) -> Result<PgSession, DbError> {
        Ok(PgSession {
            conn: super::connect_with(config, tls).map_err(db_error)?,
            statements: vec![],
            transaction: None,
        })
    }

    fn transaction(&mut self) -> Result<&(postgres::Statement, postgres::Statement), DbError> {
        if self.transaction.is_none() {
            let begin = self.conn.prepare("BEGIN").map_err(db_error)?;
            let commit = self.conn.prepare("COMMIT").map_err(db_error)?;
            self.transaction = Some((begin, commit));
        }
        Ok(self.transaction.as_ref().expect("prepared above"))
    }
}

impl Session for PgSession {
    fn prepare(&mut self, sql: &str) -> Result<Stmt, DbError> {
        let stmt = self
            .conn
            .prepare(&number_placeholders(sql))
            .map_err(db_error)?;
        self.statements.push(stmt);
        Ok(self.statements.len() - 1)
    }

    fn execute(&mut self, stmt: Stmt, params: &[Value<'_>]) -> Result<(), DbError> {
        // The parameters as the driver takes them, without an allocation per query.
        const MAX: usize = 8;
        let mut refs: [&(dyn ToSql + Sync); MAX] = [&0i64; MAX];
        let many: Vec<&(dyn ToSql + Sync)>;
        let refs: &[&(dyn ToSql + Sync)] = if params.len() <= MAX {
            for (r, p) in refs.iter_mut().zip(params) {
                *r = p;
            }
            &refs[..params.len()]
        } else {
            many = params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
            &many
        };
        self.conn
            .execute(&self.statements[stmt], refs)
            .map(|_| ())
            .map_err(db_error)
    }

    fn simple(&mut self, sql: &str) -> Result<(), DbError> {
        self.conn.batch_execute(sql).map_err(db_error)
    }

    fn statement(&mut self, sql: &str) -> Result<(), DbError> {
        self.conn.execute(sql, &[]).map(|_| ()).map_err(db_error)
    }

    fn read_only(&mut self) -> Result<(), DbError> {
        self.simple(READ_ONLY)
    }

    fn begin(&mut self) -> Result<(), DbError> {
        let begin = self.transaction()?.0.clone();
        self.conn.execute(&begin, &[]).map(|_| ()).map_err(db_error)
    }

    fn commit(&mut self) -> Result<(), DbError> {
        let commit = self.transaction()?.1.clone();
        self.conn
            .execute(&commit, &[])
            .map(|_| ())
            .map_err(db_error)
    }

    fn rollback(&mut self) {
        let _ = self.conn.batch_execute("ROLLBACK");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_outside_quotes() {
        assert_eq!(
            number_placeholders("SELECT c FROM t WHERE id BETWEEN ? AND ? AND x = '?'"),
            "SELECT c FROM t WHERE id BETWEEN $1 AND $2 AND x = '?'"
        );
        assert_eq!(number_placeholders("SELECT 1"), "SELECT 1");
    }
}
