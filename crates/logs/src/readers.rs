//! The readers, one per log format, each a stream of `Entry`s: the MySQL family's general
//! and slow logs (`mysql`), PostgreSQL's stderr log under any prefix (`pg_stderr`, its
//! prefix in `pg_prefix`), syslog's and logplex's lines around it (`pg_syslog`), csvlog
//! (`pg_csv`) and JSON lines (`pg_json`).

pub mod mysql;
pub mod pg_csv;
pub mod pg_json;
pub mod pg_prefix;
pub mod pg_stderr;
pub(crate) mod pg_syslog;
