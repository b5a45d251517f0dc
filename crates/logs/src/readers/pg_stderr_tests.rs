//! PostgreSQL's log readers on hand-made logs: %c and %p prefixes, multi-line statements,
//! execute with its parameters, an ERROR's repeated STATEMENT, csv records holding newlines
//! and quotes, a cut last record, lines that belong to nothing.

use super::*;
use crate::readers::pg_csv::PgCsvLog;
use crate::readers::pg_prefix::{pg_time, session_of_c};

fn sqls(entries: &[Entry]) -> Vec<(u64, String)> {
    entries
        .iter()
        .filter_map(|e| match &e.what {
            What::Query(s) | What::Execute(s) => Some((e.session, s.clone())),
            _ => None,
        })
        .collect()
}

const STDERR_C: &str = "\
2026-12-01 10:00:00.100 UTC [411] 674c3a10.19b app@shop LOG:  connection authorized: user=app database=shop application_name=psql
2026-12-01 10:00:00.200 UTC [411] 674c3a10.19b app@shop LOG:  statement: SELECT 1
2026-12-01 10:00:00.300 UTC [412] 674c3a11.19c app@shop LOG:  statement: SELECT *
\tFROM t
\tWHERE a = 'LOG:  x'
2026-12-01 10:00:00.400 UTC [411] 674c3a10.19b app@shop LOG:  execute <unnamed>: SELECT v FROM t WHERE id = $1 AND s = $2 AND z = $10
2026-12-01 10:00:00.400 UTC [411] 674c3a10.19b app@shop DETAIL:  parameters: $1 = '5', $2 = 'it''s, $1', $10 = NULL
2026-12-01 10:00:00.500 UTC [412] 674c3a11.19c app@shop ERROR:  relation \"nope\" does not exist at character 15
2026-12-01 10:00:00.500 UTC [412] 674c3a11.19c app@shop STATEMENT:  SELECT * FROM nope
garbage that is no log line
2026-12-01 10:00:00.600 UTC [411] 674c3a10.19b app@shop LOG:  duration: 0.120 ms  statement: SELECT 2
2026-12-01 10:00:00.700 UTC [411] 674c3a10.19b app@shop LOG:  duration: 0.050 ms
2026-12-01 10:00:00.800 UTC [411] 674c3a10.19b app@shop LOG:  disconnection: session time: 0:00:00.700 user=app database=shop host=[local]
2026-12-01 10:00:00.900 UTC [77] 674c3a00.4d   LOG:  checkpoint starting: time
";

#[test]
fn stderr_with_the_session_id_in_the_prefix() {
    let mut r = PgStderrLog::new(STDERR_C.as_bytes());
    let entries: Vec<Entry> = r.by_ref().collect();
    let s411 = session_of_c("674c3a10.19b").unwrap();
    let s412 = session_of_c("674c3a11.19c").unwrap();
    assert_ne!(s411, s412);
    assert_eq!(
        entries[0].what,
        What::Connect {
            db: Some("shop".into())
        }
    );
    assert_eq!(
        sqls(&entries),
        vec![
            (s411, "SELECT 1".to_string()),
            (s412, "SELECT *\nFROM t\nWHERE a = 'LOG:  x'".to_string()),
            (
                s411,
                "SELECT v FROM t WHERE id = '5' AND s = 'it''s, $1' AND z = NULL".to_string()
            ),
            (s411, "SELECT 2".to_string()),
        ],
        "{entries:#?}"
    );
    assert_eq!(entries.last().unwrap().what, What::Quit);
    assert_eq!(
        entries[1].at_us.unwrap() - entries[0].at_us.unwrap(),
        100_000
    );
    assert_eq!(r.malformed.count, 1, "{:?}", r.malformed);
    assert_eq!(r.malformed.first[0].line, 10);
}

#[test]
fn stderr_with_debians_default_prefix_uses_the_process_id() {
    let log = "\
2026-12-01 10:00:00.100 UTC [411] app@shop LOG:  statement: SELECT 1
2026-12-01 10:00:00.200 UTC [412] app@shop LOG:  statement: SELECT 2
2026-12-01 10:00:00.300 UTC [411] app@shop LOG:  statement: SELECT 3";
    let entries: Vec<Entry> = PgStderrLog::new(log.as_bytes()).collect();
    assert_eq!(
        sqls(&entries),
        vec![
            (411, "SELECT 1".into()),
            (412, "SELECT 2".into()),
            (411, "SELECT 3".into())
        ]
    );
}

#[test]
fn a_prefix_without_a_session_is_counted_not_guessed() {
    let log = "10:00:00 LOG:  statement: SELECT 1\n";
    let mut r = PgStderrLog::new(log.as_bytes());
    assert_eq!(r.by_ref().count(), 0);
    assert_eq!(r.malformed.count, 1);
    assert!(r.malformed.first[0].why.contains("%c"));
}

#[test]
fn csvlog_records_with_newlines_quotes_and_parameters() {
    let log = "\
2026-12-01 10:00:00.100 UTC,\"app\",\"shop\",411,\"[local]\",674c3a10.19b,1,\"authentication\",2026-12-01 10:00:00 UTC,3/1,0,LOG,00000,\"connection authorized: user=app database=shop\",,,,,,,,,\"psql\",\"client backend\",,0
2026-12-01 10:00:00.200 UTC,\"app\",\"shop\",411,\"[local]\",674c3a10.19b,2,\"SELECT\",2026-12-01 10:00:00 UTC,3/2,0,LOG,00000,\"statement: SELECT 'a,\"\"b\"\"'
FROM t\",,,,,,,,,\"psql\",\"client backend\",,0
2026-12-01 10:00:00.300 UTC,\"app\",\"shop\",411,\"[local]\",674c3a10.19b,3,\"SELECT\",2026-12-01 10:00:00 UTC,3/3,0,LOG,00000,\"execute S_1: SELECT $1::int\",\"parameters: $1 = '7'\",,,,,,,,\"psql\",\"client backend\",,0
2026-12-01 10:00:00.400 UTC,\"app\",\"shop\",411,\"[local]\",674c3a10.19b,4,\"SELECT\",2026-12-01 10:00:00 UTC,3/4,0,ERROR,42P01,\"relation \"\"nope\"\" does not exist\",,,,,,\"SELECT * FROM nope\",15,,\"psql\",\"client backend\",,0
2026-12-01 10:00:00.500 UTC,\"app\",\"shop\",411,\"[local]\",674c3a10.19b,5,\"SELECT\",2026-12-01 10:00:00 UTC,3/5,0,LOG,00000,\"statement: SELECT 'cut
";
    let mut r = PgCsvLog::new(log.as_bytes());
    let entries: Vec<Entry> = r.by_ref().collect();
    let s = session_of_c("674c3a10.19b").unwrap();
    assert_eq!(
        entries[0].what,
        What::Connect {
            db: Some("shop".into())
        }
    );
    assert_eq!(
        sqls(&entries),
        vec![
            (s, "SELECT 'a,\"b\"'\nFROM t".to_string()),
            (s, "SELECT '7'::int".to_string())
        ]
    );
    assert_eq!(entries[1].line, 2);
    assert_eq!(entries[2].line, 4);
    assert_eq!(r.malformed.count, 1, "{:?}", r.malformed);
    assert_eq!(r.malformed.first[0].line, 6);
}

#[test]
fn parameters_parse_and_fill_in() {
    assert_eq!(
        parse_parameters("$1 = '5', $2 = NULL, $3 = 'a, ''$1'''"),
        vec![
            (1, "'5'".to_string()),
            (2, "NULL".to_string()),
            (3, "'a, ''$1'''".to_string())
        ]
    );
    assert_eq!(
        substitute(
            "select $1, '$2', $12",
            &[(1, "'x'".into()), (12, "3".into())]
        ),
        "select 'x', '$2', 3"
    );
}

/// The prefixes people set (made here after the layouts pgbadger's and pgreplay's documents
/// and RDS's default show): the session is the process id or %c, never pgbadger's line
/// number; the database from %u@%d or db=%d.
#[test]
fn stderr_with_the_prefixes_people_use() {
    let read = |log: &str| {
        let mut r = PgStderrLog::new(log.as_bytes());
        let entries: Vec<Entry> = r.by_ref().collect();
        assert!(r.malformed.is_empty(), "{:?}", r.malformed);
        entries
    };
    // pgbadger's recommended '%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h '.
    let pgbadger = "\
2026-12-01 10:00:00 UTC [4321]: [1-1] user=app,db=shop,app=psql,client=[local] LOG:  statement: SELECT 1
2026-12-01 10:00:01 UTC [4322]: [1-1] user=app,db=shop,app=psql,client=[local] LOG:  statement: SELECT 2
2026-12-01 10:00:02 UTC [4321]: [2-1] user=app,db=shop,app=psql,client=[local] LOG:  statement: SELECT 3
";
    let e = read(pgbadger);
    assert_eq!(
        sqls(&e),
        [(4321, "SELECT 1"), (4322, "SELECT 2"), (4321, "SELECT 3")]
            .map(|(s, q)| (s, q.to_string()))
    );
    assert_eq!(
        read_prefix("2026-12-01 10:00:00 UTC [4321]: [1-1] user=app,db=shop,app=psql ").1,
        Some("shop".into())
    );
    // '%t [%p]: ' alone.
    let e = read("2026-12-01 10:00:00 UTC [77]: LOG:  statement: SELECT 4\n");
    assert_eq!(sqls(&e), [(77, "SELECT 4".to_string())]);
    // RDS and Aurora: '%t:%r:%u@%d:[%p]:'.
    let rds = "2026-12-01 10:00:00 UTC:10.0.0.5(41234):app@shop:[5150]:LOG:  statement: SELECT 5\n";
    let e = read(rds);
    assert_eq!(sqls(&e), [(5150, "SELECT 5".to_string())]);
    let (session, db, at) = read_prefix("2026-12-01 10:00:00 UTC:10.0.0.5(41234):app@shop:[5150]:");
    assert_eq!((session, db.as_deref()), (Some(5150), Some("shop")));
    assert_eq!(at, pg_time("2026-12-01 10:00:00 UTC"));
    // pgreplay's '%m|%u|%d|%c|'.
    let pgreplay = "2026-12-01 10:00:00.123 UTC|app|shop|674c3a10.19b|LOG:  statement: SELECT 6\n";
    let e = read(pgreplay);
    assert_eq!(
        sqls(&e),
        [(
            session_of_c("674c3a10.19b").unwrap(),
            "SELECT 6".to_string()
        )]
    );
}

#[test]
fn syslog_lines_are_read_with_their_later_lines_and_the_headers_pid_and_time() {
    // Two processes interleaved, a statement over three lines (rsyslog's #011 for the tab),
    // another program's line, and a DETAIL with an execute's values.
    let log = "\
Mar  2 09:00:01 db1 postgres[501]: [4-1] user=app,db=shop LOG:  connection authorized: user=app database=shop
Mar  2 09:00:02 db1 postgres[501]: [5-1] user=app,db=shop LOG:  statement: SELECT a,
Mar  2 09:00:02 db1 postgres[502]: [5-1] user=app,db=shop LOG:  statement: SELECT 9
Mar  2 09:00:02 db1 postgres[501]: [5-2] #011  b
Mar  2 09:00:02 db1 postgres[501]: [5-3] #011FROM t
Mar  2 09:00:03 db1 cron[77]: (root) CMD (run-parts /etc/cron.hourly)
Mar  2 09:00:04 db1 postgres[502]: [6-1] user=app,db=shop LOG:  execute s1: SELECT $1
Mar  2 09:00:04 db1 postgres[502]: [6-2] user=app,db=shop DETAIL:  parameters: $1 = '7'
";
    let mut r = PgStderrLog::new(log.as_bytes());
    let entries: Vec<Entry> = r.by_ref().collect();
    assert_eq!(
        sqls(&entries),
        vec![
            (502, "SELECT 9".to_string()),
            (501, "SELECT a,\n  b\nFROM t".to_string()),
            (502, "SELECT '7'".to_string()),
        ],
        "{entries:#?}"
    );
    let first = entries[0].at_us.unwrap();
    assert_eq!(entries.last().unwrap().at_us.unwrap() - first, 3_000_000);
    assert_eq!(r.malformed.count, 1, "the cron line");
}

#[test]
fn a_process_id_reused_by_a_new_connection_is_another_session() {
    let log = "\
2026-12-01 10:00:00 UTC [900] LOG:  connection authorized: user=app database=shop
2026-12-01 10:00:01 UTC [900] LOG:  statement: SELECT 1
2026-12-01 10:00:05 UTC [900] LOG:  connection received: host=[local]
2026-12-01 10:00:05 UTC [900] LOG:  connection authorized: user=app database=shop
2026-12-01 10:00:06 UTC [900] LOG:  statement: SELECT 2
";
    let entries: Vec<Entry> = PgStderrLog::new(log.as_bytes()).collect();
    let s = sqls(&entries);
    assert_eq!(s.len(), 2);
    assert_ne!(s[0].0, s[1].0, "{entries:#?}");
}

#[test]
fn one_space_after_the_severity_or_the_duration_is_read() {
    // (A log some tool rewrote: PostgreSQL writes two.)
    let log = "2021-05-27 17:00:00 UTC:10.1.91.65:app@shop:[24743]:LOG: duration: 0.054 ms \
               statement: SELECT * FROM t1;\n";
    let entries: Vec<Entry> = PgStderrLog::new(log.as_bytes()).collect();
    assert_eq!(
        sqls(&entries),
        vec![(24743, "SELECT * FROM t1;".to_string())]
    );
}

#[test]
fn a_prefix_given_by_hand_reads_what_the_lines_alone_cannot() {
    // `%m %p ` (the pid unbracketed) and pgbadger's `%t [%p]: [%l-1] user=%u,db=%d `.
    let bare = "\
2026-12-01 10:00:00.100 UTC 4242 LOG:  statement: SELECT 1
2026-12-01 10:00:00.200 UTC 4243 LOG:  statement: SELECT 2
";
    let mut alone = PgStderrLog::new(bare.as_bytes());
    assert!(sqls(&alone.by_ref().collect::<Vec<_>>()).is_empty());
    assert_eq!(alone.malformed.count, 2, "no session without the prefix");
    let given = crate::readers::pg_prefix::Prefix::parse("%m %p ").unwrap();
    let entries: Vec<Entry> = PgStderrLog::with_prefix(bare.as_bytes(), given).collect();
    assert_eq!(
        sqls(&entries),
        vec![
            (4242, "SELECT 1".to_string()),
            (4243, "SELECT 2".to_string())
        ]
    );
    let badger = "\
2026-12-01 10:00:00 UTC [9]: [1-1] user=app,db=shop LOG:  connection authorized: user=app database=shop
2026-12-01 10:00:01 UTC [9]: [2-1] user=app,db=shop LOG:  statement: SELECT 3
2026-12-01 10:00:02 UTC [9]: [3-1] user=app,db=shop LOG:  statement: SELECT 4
";
    let p = crate::readers::pg_prefix::Prefix::parse("%t [%p]: [%l-1] user=%u,db=%d ").unwrap();
    let entries: Vec<Entry> = PgStderrLog::with_prefix(badger.as_bytes(), p).collect();
    assert_eq!(
        entries[0].what,
        What::Connect {
            db: Some("shop".into())
        }
    );
    let s = sqls(&entries);
    assert_eq!(s.len(), 2);
    assert!(
        s.iter().all(|(session, _)| *session == 9),
        "%l is not the session: {s:?}"
    );
}
