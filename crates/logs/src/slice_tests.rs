//! The slice read from hand-made logs: formats told from content, the time window, the
//! busiest sessions, writes and server changes left out, databases per session (general log)
//! or shared (slow log), fingerprints tagged by count, the cap, lanes, and bad input.

use super::*;
use crate::MAX_STATEMENT;
use crate::replay_spec::Pace;

fn write(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    (dir, p)
}

const GENERAL: &str = "\
/usr/sbin/mariadbd, Version: 10.11.6-MariaDB-log (Debian 12). started with:
Tcp port: 0  Unix socket: /tmp/x.sock
Time\t\t    Id Command\tArgument
261201 10:00:00\t    5 Connect\tapp@localhost on shop using Socket
\t\t    5 Query\tSELECT * FROM t WHERE id = 1
\t\t    6 Connect\tapp@localhost on crm using Socket
\t\t    6 Query\tSELECT * FROM t WHERE id = 2
261201 10:00:01\t    5 Query\tUPDATE t SET a = 1 WHERE id = 1
\t\t    5 Query\tSELECT * FROM t WHERE id = 3
\t\t    7 Connect\tapp@localhost on shop using Socket
\t\t    7 Query\tSET GLOBAL general_log = 0
\t\t    7 Query\tSELECT name FROM u
\t\t    6 Init DB\tshop
\t\t    6 Query\tSELECT * FROM t WHERE id = 4
261201 10:00:02\t    5 Query\tSELECT * FROM t WHERE id = 5
\t\t    5 Quit\t
";

fn sqls(s: &Slice) -> Vec<(u32, &str)> {
    s.stmts.iter().map(|x| (x.session, &*x.sql)).collect()
}

#[test]
fn a_general_log_slice_keeps_reads_with_their_sessions_and_databases() {
    let (_d, p) = write("general.log", GENERAL);
    let spec = ReplaySpec::of(&p);
    let s = load(&spec, None, &|| Ok(())).unwrap();
    assert_eq!(s.stats.format, "general");
    assert_eq!(s.stats.skipped_writes, 1);
    assert_eq!(s.stats.skipped_server, 1);
    assert_eq!(s.sessions, 3);
    assert_eq!(
        sqls(&s),
        vec![
            (0, "SELECT * FROM t WHERE id = 1"),
            (1, "SELECT * FROM t WHERE id = 2"),
            (0, "SELECT * FROM t WHERE id = 3"),
            (2, "SELECT name FROM u"),
            (1, "SELECT * FROM t WHERE id = 4"),
            (0, "SELECT * FROM t WHERE id = 5"),
        ]
    );
    let db = |i: usize| s.uses[s.stmts[i].db as usize].as_str();
    assert_eq!(db(0), "USE `shop`");
    assert_eq!(db(1), "USE `crm`");
    assert_eq!(db(4), "USE `shop`", "Init DB changed session 6's database");
    // A second's statements spread over it: two at 0 s, three at 1 s, one at 2 s.
    let at: Vec<u64> = s.stmts.iter().map(|x| x.at_ns / 1_000_000).collect();
    assert_eq!(at, vec![0, 500, 1000, 1333, 1666, 2000]);
    assert_eq!((s.stats.span_s, s.stats.recorded_rate), (2.0, 3.0));
    // One fingerprint for the five `t` reads, tagged first.
    assert_eq!(s.fingerprints[0].count, 5);
    assert_eq!(s.stmts[0].tag, 0);
    assert_eq!(
        s.fingerprints[0].fingerprint,
        "select * from t where id = ?"
    );

    // With writes: the update is in.
    let mut w = spec.clone();
    w.writes = true;
    let s = load(&w, None, &|| Ok(())).unwrap();
    assert_eq!(s.stats.skipped_writes, 0);
    assert_eq!(s.stmts.len(), 7);
    assert_eq!(s.stats.skipped_server, 1, "never the server's settings");
}

#[test]
fn from_to_sessions_and_the_cap_cut_the_slice() {
    let (_d, p) = write("general.log", GENERAL);
    let mut spec = ReplaySpec::of(&p);
    spec.from = Some("1s".into());
    spec.to = Some("261201 10:00:02".into());
    let s = load(&spec, None, &|| Ok(())).unwrap();
    assert_eq!(s.stats.ended_by, "--to");
    assert_eq!(
        sqls(&s),
        vec![
            (0, "SELECT * FROM t WHERE id = 3"),
            (1, "SELECT name FROM u"),
            (2, "SELECT * FROM t WHERE id = 4"),
        ]
    );
    // The database of a session that connected before the slice is still known.
    assert_eq!(s.uses[s.stmts[2].db as usize], "USE `shop`");
    assert_eq!(
        s.stmts[0].at_ns, 0,
        "offsets from the slice's first statement"
    );

    let mut busiest = ReplaySpec::of(&p);
    busiest.sessions = Some(1);
    let s = load(&busiest, None, &|| Ok(())).unwrap();
    assert_eq!(s.sessions, 1);
    assert_eq!(s.stats.sessions_left_out, 2);
    assert_eq!(s.stats.statements_left_out, 3);
    assert!(s.stmts.iter().all(|x| x.session == 0) && s.stmts.len() == 3);
    assert_eq!(s.fingerprints[0].count, 3);

    let mut cap = ReplaySpec::of(&p);
    cap.max_statements = 2;
    let s = load(&cap, None, &|| Ok(())).unwrap();
    assert_eq!(
        (s.stmts.len(), s.stats.ended_by.as_str()),
        (2, "max statements")
    );

    let s = load(
        &ReplaySpec::of(&p),
        Some(std::time::Duration::from_millis(500)),
        &|| Ok(()),
    )
    .unwrap();
    assert_eq!((s.stmts.len(), s.stats.ended_by.as_str()), (2, "span"));
}

#[test]
fn a_slow_log_use_holds_for_every_session_after_it() {
    let log = "\
# Time: 261201 10:00:00
# User@Host: app[app] @ localhost []
# Thread_id: 5  Schema: shop  QC_hit: No
# Query_time: 0.000100  Lock_time: 0.000010  Rows_sent: 1  Rows_examined: 1
use shop;
SET timestamp=1796119200;
SELECT 1 FROM t;
# User@Host: app[app] @ localhost []
# Thread_id: 6  Schema: shop  QC_hit: No
# Query_time: 0.000100  Lock_time: 0.000010  Rows_sent: 1  Rows_examined: 1
SET timestamp=1796119201;
SELECT 2 FROM t;
";
    let (_d, p) = write("slow.log", log);
    let s = load(&ReplaySpec::of(&p), None, &|| Ok(())).unwrap();
    assert_eq!(s.stats.format, "slow");
    assert_eq!(s.sessions, 2);
    assert!(
        s.stmts
            .iter()
            .all(|x| s.uses[x.db as usize] == "USE `shop`")
    );
    assert_eq!(s.stmts[1].at_ns, 1_000_000_000);
}

#[test]
fn lanes_deal_sessions_and_share_them_when_clients_outnumber_them() {
    let (_d, p) = write("general.log", GENERAL);
    let s = load(&ReplaySpec::of(&p), None, &|| Ok(())).unwrap();
    assert_eq!(s.lane(0, 1).len(), 6);
    assert_eq!(s.lane(0, 2), vec![0, 2, 3, 5], "sessions 0 and 2");
    assert_eq!(s.lane(1, 2), vec![1, 4]);
    assert_eq!(
        s.lane(4, 5),
        vec![1, 4],
        "a fifth client replays session 1 again"
    );
    for lanes in 1..7 {
        assert!((0..lanes).all(|l| !s.lane(l, lanes).is_empty()));
    }
}

#[test]
fn formats_are_told_from_their_first_lines() {
    assert_eq!(LogFormat::detect(GENERAL), Some(LogFormat::General));
    assert_eq!(
        LogFormat::detect("x\n# Time: 261201 10:00:00\n"),
        Some(LogFormat::Slow)
    );
    assert_eq!(
        LogFormat::detect("2026-12-01 10:00:00.1 UTC [4] LOG:  statement: SELECT 1\n"),
        Some(LogFormat::Postgres)
    );
    let csv = "2026-12-01 10:00:00.100 UTC,\"app\",\"shop\",411,\"[local]\",674c3a10.19b,2,\
               \"SELECT\",2026-12-01 10:00:00 UTC,3/2,0,LOG,00000,\"statement: SELECT 1\",,,,,,,,,\
               \"psql\",\"client backend\",,0\n";
    assert_eq!(LogFormat::detect(csv), Some(LogFormat::Csvlog));
    assert_eq!(LogFormat::detect("hello\nworld\n"), None);
    // A slow log some tool wrote without `# Time` and `# User@Host`.
    for head in [
        "# Query_time: 0.1  Lock_time: 0.0\nSELECT 1;\n",
        "# Thread_id: 1  Schema: db\n",
    ] {
        assert_eq!(LogFormat::detect(head), Some(LogFormat::Slow), "{head}");
    }
    // MySQL 5.0/5.1: the command padded with spaces, not followed by a tab.
    let padded = "051007 21:55:24\t     42 Connect     root@localhost on db1\n\
                  \t\t                 42 Query       SELECT 1\n";
    assert_eq!(LogFormat::detect(padded), Some(LogFormat::General));
    // PostgreSQL with RDS's prefix and pgreplay's: no space before the severity.
    for line in [
        "2026-12-01 10:00:00 UTC:10.0.0.5(41234):app@shop:[5150]:LOG:  statement: SELECT 1\n",
        "2026-12-01 10:00:00.123 UTC|app|shop|674c3a10.19b|LOG:  statement: SELECT 1\n",
    ] {
        assert_eq!(LogFormat::detect(line), Some(LogFormat::Postgres), "{line}");
    }
    // A csvlog whose log_time a tool quoted; syslog and logplex lines; one space after the
    // severity.
    let quoted = format!("\"{}", csv.replacen(" UTC,", " UTC\",", 1));
    assert_eq!(LogFormat::detect(&quoted), Some(LogFormat::Csvlog));
    let spans = csv.replace("statement: SELECT 1", "statement: SELECT 1,\n  2\nFROM t");
    assert_eq!(LogFormat::detect(&spans), Some(LogFormat::Csvlog));
    for line in [
        "Mar  2 09:00:02 db1 postgres[501]: [5-1] user=app,db=shop LOG:  statement: SELECT 1\n",
        "2019-03-14T00:22:56+00:00 app[postgres.4882]: [GREEN] [15-1]  sql_error_code = 00000 \
         LOG:  statement: SELECT 2\n",
        "2021-05-27 17:00:00 UTC:10.1.91.65:user@db:[24743]:LOG: statement: SELECT 1\n",
    ] {
        assert_eq!(LogFormat::detect(line), Some(LogFormat::Postgres), "{line}");
    }
}

#[test]
fn bad_logs_and_flags_are_usage_errors() {
    let code = |e: anyhow::Error| if crate::is_bad_input(&e) { 2 } else { 1 };
    let (_d, p) = write("notes.txt", "hello\nworld\n");
    assert_eq!(
        code(load(&ReplaySpec::of(&p), None, &|| Ok(())).unwrap_err()),
        2
    );
    let missing = ReplaySpec::of(Path::new("/nonexistent/general.log"));
    assert_eq!(code(load(&missing, None, &|| Ok(())).unwrap_err()), 2);
    let (_d2, w) = write("w.log", &GENERAL.replace("SELECT", "DELETE FROM x --"));
    let e = load(&ReplaySpec::of(&w), None, &|| Ok(())).unwrap_err();
    assert!(format!("{e:#}").contains("--replay-writes"), "{e:#}");
    assert_eq!(code(e), 2);
    assert_eq!(code(Pace::parse("0x").unwrap_err()), 2);
    assert_eq!(code(Pace::parse("1e300x").unwrap_err()), 2);
    assert_eq!(Pace::parse("2x").unwrap(), Pace::Recorded(2.0));
    assert_eq!(code(Mark::parse("yesterday").unwrap_err()), 2);
    assert_eq!(Mark::parse("5m").unwrap(), Mark::After(300_000_000));
    assert_eq!(code(LogFormat::parse("binlog").unwrap_err()), 2);
    // What a log is not, said in words: compressed, empty, pgbouncer's.
    let said = |name: &str, bytes: &[u8]| {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let e = load(&ReplaySpec::of(&p), None, &|| Ok(())).unwrap_err();
        let words = format!("{e:#}");
        assert_eq!(code(e), 2, "{words}");
        words
    };
    assert!(
        said("slow.log.gz", b"\x1f\x8b\x08\x00rest")
            .contains("compressed (gzip): decompress it first (zcat")
    );
    assert!(said("pg.log.zst", b"\x28\xb5\x2f\xfd...").contains("compressed (zstd)"));
    assert!(said("empty.log", b"\n\n").contains("is empty"));
    let bouncer = b"2018-09-12 16:09:05.313 3394 LOG C-0x562376c014e0: pgbench/app@127.0.0.1:43866 login attempt: db=pgbench user=app tls=no\n";
    assert!(said("pgbouncer.log", bouncer).contains("pgbouncer's log"));
    // A server's own log that quotes pgbouncer's words is read as what it is.
    let (_d3, quoting) = write(
        "pg.log",
        "2026-12-01 10:00:00.1 UTC [4] LOG:  statement: SELECT 'x LOG C-0x1: y'\n",
    );
    assert_eq!(
        load(&ReplaySpec::of(&quoting), None, &|| Ok(()))
            .unwrap()
            .stats
            .statements,
        1
    );
}

#[test]
fn times_that_go_back_are_taken_as_they_come() {
    // PostgreSQL's backends stamp their own lines: the log's order is not the times' order.
    let log = "\
2026-12-01 10:00:00.300 UTC [411] LOG:  statement: SELECT 1
2026-12-01 10:00:00.100 UTC [412] LOG:  statement: SELECT 2
2026-12-01 10:00:00.300 UTC [413] LOG:  statement: SELECT 3
2026-12-01 10:00:00.300 UTC [411] LOG:  statement: SELECT 4
2026-12-01 10:00:00.200 UTC [412] LOG:  statement: SELECT 5
";
    let (_d, p) = write("pg.log", log);
    let s = load(&ReplaySpec::of(&p), None, &|| Ok(())).unwrap();
    let at: Vec<u64> = s.stmts.iter().map(|x| x.at_ns / 1_000_000).collect();
    assert_eq!(at, vec![0, 0, 0, 0, 0]);
    let mut busiest = ReplaySpec::of(&p);
    busiest.sessions = Some(2);
    let s = load(&busiest, None, &|| Ok(())).unwrap();
    assert_eq!(s.stmts.len(), 4);
    assert!(s.span_ns() >= 1);
}

#[test]
fn a_log_that_is_no_regular_file_is_refused_without_being_opened() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.log");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for (path, words) in [
        (std::path::PathBuf::from("/dev/zero"), "a device"),
        (fifo, "a FIFO"),
        (dir.path().to_path_buf(), "a directory"),
    ] {
        for format in [None, Some(LogFormat::General)] {
            let mut spec = ReplaySpec::of(&path);
            spec.format = format;
            // (A FIFO with no writer would block an open for ever: this returns.)
            let e = load(&spec, None, &|| Ok(())).unwrap_err();
            assert!(crate::is_bad_input(&e), "{e:#}");
            assert!(format!("{e:#}").contains(words), "{e:#}");
        }
    }
}

/// The statements left out as longer than the bound.
fn too_long(s: &Slice) -> Option<&u64> {
    s.stats
        .skipped
        .get(crate::read_only::classify::reason::TOO_LONG)
}

#[test]
fn a_line_longer_than_the_bound_is_skipped_in_bounded_memory() {
    let long = format!("SELECT '{}'", "x".repeat(MAX_STATEMENT + 10));
    let text = GENERAL.replace("SELECT * FROM t WHERE id = 3", &long);
    let (_d, p) = write("long.log", &text);
    let s = load(&ReplaySpec::of(&p), None, &|| Ok(())).unwrap();
    assert_eq!(too_long(&s), Some(&1), "{:?}", s.stats);
    assert_eq!(s.stmts.len(), 5);
    assert!(s.stmts.iter().all(|x| x.sql.len() < 100));
    // A statement continued over many lines stops growing past the bound too.
    let mut many = String::from("\t\t    5 Query\tSELECT 1");
    for _ in 0..(MAX_STATEMENT / 1000 + 10) {
        many.push('\n');
        many.push_str(&"y".repeat(999));
    }
    let text = GENERAL.replace("\t\t    5 Query\tSELECT * FROM t WHERE id = 3", &many);
    let (_d2, p) = write("many.log", &text);
    let s = load(&ReplaySpec::of(&p), None, &|| Ok(())).unwrap();
    assert_eq!(too_long(&s), Some(&1), "{:?}", s.stats);
}

/// The statements that run prepared: (template, its database's USE, values).
fn prepared(s: &Slice) -> Vec<(&str, Option<&str>, Vec<crate::Param>)> {
    s.stmts
        .iter()
        .filter(|st| st.prep != NONE)
        .map(|st| {
            let t = &s.templates[st.prep as usize];
            let db = (t.db != NONE).then(|| s.uses[t.db as usize].as_str());
            (&*t.sql, db, st.params.to_vec())
        })
        .collect()
}

#[test]
fn a_general_logs_executions_run_prepared_with_their_values() {
    use crate::Param::{Int, Null, Text};
    // MySQL 5.1 writes the statement's id in brackets; 10.11 does not. Session 9 prepares
    // two statements and executes both; session 10 executes a text that matches no
    // statement it prepared (the other session's does not count).
    let log = "\
/usr/sbin/mariadbd, Version: 10.11.6-MariaDB-log (Debian 12). started with:
Tcp port: 0  Unix socket: /tmp/x.sock
Time\t\t    Id Command\tArgument
261201 10:00:00\t    9 Connect\tapp@localhost on shop using Socket
\t\t    9 Prepare\t[1] SELECT c FROM t WHERE id=?
\t\t    9 Prepare\tSELECT c FROM t WHERE k BETWEEN ? AND ? AND d = ?
\t\t    9 Execute\t[1] SELECT c FROM t WHERE id=42
\t\t    9 Execute\tSELECT c FROM t WHERE k BETWEEN -3 AND 7 AND d = 'it''s'
\t\t   10 Connect\tapp@localhost on crm using Socket
\t\t   10 Execute\tSELECT c FROM t WHERE id=5
\t\t    9 Execute\tSELECT c FROM t WHERE k BETWEEN 1 AND 2 AND d = NULL
\t\t    9 Close stmt\t
\t\t    9 Quit\t
";
    let (_d, p) = write("general.log", log);
    let s = load(&ReplaySpec::of(&p), None, &|| Ok(())).unwrap();
    assert_eq!(s.stats.statements, 4);
    assert_eq!((s.stats.prepared, s.stats.prepared_statements), (3, 2));
    let range = "SELECT c FROM t WHERE k BETWEEN ? AND ? AND d = ?";
    assert_eq!(
        prepared(&s),
        vec![
            (
                "SELECT c FROM t WHERE id=?",
                Some("USE `shop`"),
                vec![Int(42)]
            ),
            (
                range,
                Some("USE `shop`"),
                vec![Int(-3), Int(7), Text("it's".into())]
            ),
            (range, Some("USE `shop`"), vec![Int(1), Int(2), Null]),
        ]
    );
    // The text stays as logged: what is classified, fingerprinted and (if a connection
    // cannot prepare) sent.
    assert_eq!(&*s.stmts[0].sql, "SELECT c FROM t WHERE id=42");
    assert_eq!(s.stmts[2].prep, NONE);
    assert!(describe(&s).contains("3 of them executions of 2 prepared statements"));
}

#[test]
fn a_postgresql_execute_runs_prepared_with_its_detail_values() {
    use crate::Param::{Null, Text};
    let log = "\
2026-12-01 10:00:00.100 UTC [411] LOG:  execute S_1: SELECT v FROM t WHERE id = $1 AND n = $2
2026-12-01 10:00:00.100 UTC [411] DETAIL:  parameters: $1 = '5', $2 = NULL
2026-12-01 10:00:00.200 UTC [411] LOG:  execute <unnamed>: SELECT v FROM t WHERE s = $1
2026-12-01 10:00:00.200 UTC [411] DETAIL:  parameters: $1 = 'it''s'
2026-12-01 10:00:00.300 UTC [411] LOG:  execute S_2: SELECT now()
2026-12-01 10:00:00.400 UTC [411] LOG:  execute S_3: SELECT v FROM t WHERE id = $1
2026-12-01 10:00:00.500 UTC [411] LOG:  statement: SELECT 1
";
    let (_d, p) = write("pg.log", log);
    let s = load(&ReplaySpec::of(&p), None, &|| Ok(())).unwrap();
    assert_eq!(s.stats.statements, 5);
    assert_eq!(
        prepared(&s),
        vec![
            (
                "SELECT v FROM t WHERE id = $1 AND n = $2",
                None,
                vec![Text("5".into()), Null]
            ),
            (
                "SELECT v FROM t WHERE s = $1",
                None,
                vec![Text("it's".into())]
            ),
            ("SELECT now()", None, vec![]),
        ]
    );
    // Values substituted into the text; an execute without its values runs as text.
    assert_eq!(
        &*s.stmts[0].sql,
        "SELECT v FROM t WHERE id = '5' AND n = NULL"
    );
    assert_eq!(s.stmts[3].prep, NONE);
}

#[test]
fn a_second_of_statements_before_a_far_time_is_paced_without_overflow() {
    // A session may set its own @@timestamp, and the slow log then stamps its statements with
    // it: a second of many statements followed by one a century later is read, not a panic
    // (the even spread of a second's statements multiplied the gap by their count).
    let entry = |at: u64, i: u64| {
        format!(
            "# User@Host: app[app] @ localhost []\n# Thread_id: 5  Schema: shop  QC_hit: No\n\
             # Query_time: 0.000100  Lock_time: 0.000010  Rows_sent: 1  Rows_examined: 1\n\
             # Rows_affected: 0  Bytes_sent: 60\nSET timestamp={at};\n\
             SELECT name FROM items WHERE id = {i};\n"
        )
    };
    let mut log = String::from("# Time: 261201 10:00:00\n");
    for i in 0..40 {
        log.push_str(&entry(1_796_378_400, i));
    }
    log.push_str(&entry(1_796_378_400 + 100 * 365 * 86_400, 40));
    let (_d, p) = write("slow.log", &log);
    let s = load(&ReplaySpec::of(&p), None, &|| Ok(())).unwrap();
    assert_eq!(s.stmts.len(), 41);
    let at: Vec<u64> = s.stmts.iter().map(|x| x.at_ns).collect();
    assert!(at.windows(2).all(|w| w[0] <= w[1]), "{at:?}");
    assert!(at[39] > at[1], "a second's statements spread: {at:?}");
}
