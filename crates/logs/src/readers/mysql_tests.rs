//! The MySQL family's log readers on hand-made logs: MariaDB's and MySQL's line formats,
//! multi-line statements, the server's header lines, bytes that are not UTF-8, a truncated
//! last line, lines that belong to nothing.

use super::*;

fn general(text: &[u8]) -> (Vec<Entry>, Vec<Malformed>) {
    let mut r = GeneralLog::new(text);
    let entries: Vec<Entry> = r.by_ref().collect();
    (entries, r.malformed.first)
}

fn query(e: &Entry) -> &str {
    match &e.what {
        What::Query(s) => s,
        other => panic!("not a query: {other:?}"),
    }
}

const MARIADB: &str =
    "/usr/sbin/mariadbd, Version: 10.11.6-MariaDB-0+deb12u1-log (Debian 12). started with:
Tcp port: 0  Unix socket: /tmp/x/mysqld.sock
Time\t\t    Id Command\tArgument
241201 10:00:00\t    5 Connect\troot@localhost on shop using Socket
\t\t    5 Query\tSELECT 1
\t\t    6 Init DB\tshop
241201  9:59:59\t    6 Query\tSELECT *
FROM t
WHERE a = 'x\ty'
\t\t    5 Quit\t
";

#[test]
fn a_mariadb_general_log_reads_as_sessions_entries() {
    let (e, bad) = general(MARIADB.as_bytes());
    assert!(bad.is_empty(), "{bad:?}");
    assert_eq!(e.len(), 5, "{e:#?}");
    assert_eq!(
        e[0].what,
        What::Connect {
            db: Some("shop".into())
        }
    );
    assert_eq!((e[0].session, e[0].line), (5, 4));
    assert_eq!(query(&e[1]), "SELECT 1");
    // A line without a time has the latest one.
    assert_eq!(e[1].at_us, e[0].at_us);
    assert_eq!(e[2].what, What::InitDb("shop".into()));
    assert_eq!(query(&e[3]), "SELECT *\nFROM t\nWHERE a = 'x\ty'");
    assert_eq!(e[3].at_us.unwrap() - e[0].at_us.unwrap(), -1_000_000);
    assert_eq!(e[4].what, What::Quit);
}

#[test]
fn mysql_times_and_odd_bytes_and_a_cut_last_line() {
    let mut log = b"2024-12-01T10:00:00.250000Z\t   12 Query\tSELECT 'caf\xe9'\n".to_vec();
    log.extend_from_slice(b"2024-12-01T10:00:01Z\t   12 Query\tSELECT 2");
    let (e, bad) = general(&log);
    assert!(bad.is_empty());
    assert_eq!(query(&e[0]), "SELECT 'caf\u{fffd}'");
    assert_eq!(query(&e[1]), "SELECT 2");
    assert_eq!(e[1].at_us.unwrap() - e[0].at_us.unwrap(), 750_000);
    // 2024-12-01T10:00:00Z, as `date -d ... +%s` gives it.
    assert_eq!(e[1].at_us, Some(1_733_047_201_000_000));
}

#[test]
fn lines_that_belong_to_nothing_are_counted_by_number() {
    let (e, bad) = general(b"garbage before anything\n\t\t    5 Query\tSELECT 1\n");
    assert_eq!(e.len(), 1);
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].line, 1);
    // A restart's header in the middle ends the statement before it.
    let twice = format!("{MARIADB}{MARIADB}");
    let (e, bad) = general(twice.as_bytes());
    assert!(bad.is_empty());
    assert_eq!(e.len(), 10);
    assert_eq!(e[4].what, What::Quit);
}

const SLOW: &str =
    "/usr/sbin/mariadbd, Version: 10.11.6-MariaDB-0+deb12u1-log (Debian 12). started with:
Tcp port: 0  Unix socket: /tmp/x/mysqld.sock
Time                 Id Command    Argument
# Time: 241201 10:00:00
# User@Host: root[root] @ localhost []
# Thread_id: 7  Schema: shop  QC_hit: No
# Query_time: 0.000100  Lock_time: 0.000000  Rows_sent: 1  Rows_examined: 0
# Rows_affected: 0  Bytes_sent: 57
use shop;
SET timestamp=1733047200;
SELECT c
FROM t WHERE id = 3;
# User@Host: app[app] @ localhost []  Id:    9
# Query_time: 0.2
SET timestamp=1733047201;
UPDATE t SET c = 'x;y' WHERE id = 4;
";

#[test]
fn a_slow_log_reads_as_entries_with_their_database_and_time() {
    let mut r = SlowLog::new(SLOW.as_bytes());
    let e: Vec<Entry> = r.by_ref().collect();
    assert!(r.malformed.is_empty(), "{:?}", r.malformed);
    assert_eq!(e.len(), 3, "{e:#?}");
    assert_eq!(e[0].what, What::InitDb("shop".into()));
    assert_eq!(e[1].session, 7);
    assert_eq!(query(&e[1]), "SELECT c\nFROM t WHERE id = 3");
    assert_eq!(e[1].at_us, Some(1_733_047_200_000_000));
    assert_eq!(e[2].session, 9);
    assert_eq!(query(&e[2]), "UPDATE t SET c = 'x;y' WHERE id = 4");
    assert_eq!(e[2].at_us, Some(1_733_047_201_000_000));
    // The rows sent, where the entry's `# Query_time:` line says them (the second's does not).
    assert_eq!((e[1].rows, e[2].rows), (Some(1), None));
    assert_eq!(e[0].rows, None, "a USE is not a statement with rows");
}

/// The layouts MySQL 5.0/5.1 and Percona Server write (made here, after the samples
/// percona-toolkit publishes): `# Time` and `# User@Host` on one line, the database as
/// `Schema:` on the thread's line, replication values before a statement, and an
/// administrator command, which runs nothing.
const SLOW_51: &str = "# Time: 071218 11:48:27 # User@Host: [SQL_SLAVE] @  []
# Thread_id: 10  Schema: shop
# Query_time: 0.000012  Lock_time: 0.000000  Rows_sent: 0  Rows_examined: 0
# QC_Hit: No  Full_scan: No  Full_join: No  Tmp_table: No  Tmp_table_on_disk: No
SELECT col FROM items;
# User@Host: app[app] @ web1 [10.0.0.2]
# Thread_id: 11
# Query_time: 0.001  Lock_time: 0.000  Rows_sent: 0  Rows_examined: 0
SET insert_id=34484549,timestamp=1197996508;
INSERT INTO orders (item)
VALUES ('211');
# Time: 071218 11:48:30 # User@Host: app[app] @ web1 []
# Thread_id: 11
# Query_time: 0.000  Lock_time: 0.000  Rows_sent: 0  Rows_examined: 0
# administrator command: Quit;
# User@Host: app[app] @ web1 []
# Thread_id: 12
# Query_time: 0.000  Lock_time: 0.000  Rows_sent: 1  Rows_examined: 1
SET last_insert_id=7,timestamp=1197996511;
SELECT LAST_INSERT_ID();
";

#[test]
fn old_and_percona_slow_logs_read_with_their_times_sessions_and_databases() {
    let mut r = SlowLog::new(SLOW_51.as_bytes());
    let e: Vec<Entry> = r.by_ref().collect();
    assert!(r.malformed.is_empty(), "{:?}", r.malformed);
    assert_eq!(e.len(), 4, "{e:#?}");
    assert_eq!(e[0].what, What::InitDb("shop".into()));
    assert_eq!((e[1].session, query(&e[1])), (10, "SELECT col FROM items"));
    // 2007-12-18 11:48:27 from the shared line.
    assert_eq!(e[1].at_us, Some(1_197_978_507_000_000));
    // The replication values are the entry's, not glued to its statement.
    assert_eq!(query(&e[2]), "INSERT INTO orders (item)\nVALUES ('211')");
    assert_eq!(
        (e[2].session, e[2].at_us),
        (11, Some(1_197_996_508_000_000))
    );
    assert_eq!(query(&e[3]), "SELECT LAST_INSERT_ID()");
    assert_eq!(e[3].at_us, Some(1_197_996_511_000_000));
    // A SET that assigns anything else is a statement.
    assert_eq!(session_set("set timestamp=5;"), Some(Some(5)));
    assert_eq!(session_set("set insert_id=5;"), Some(None));
    assert_eq!(session_set("set names utf8;"), None);
    assert_eq!(session_set("set timestamp=5, sql_mode='';"), None);
}

/// MySQL 5.0 and 5.1 pad the command to a column with spaces, and indent a statement's
/// next lines (made here after percona-toolkit's genlog samples).
const GENERAL_51: &str = "051007 21:55:24\t     42 Connect     root@localhost on db1
\t\t                 42 Query       SELECT foo
                         FROM tbl
                         WHERE col=12345
\t\t                 42 Quit
061226 15:42:36\t     11 Connect     root@localhost on  
\t\t                 11 Init DB     my_webstats
\t\t                 11 Query       SELECT DISTINCT col FROM tbl WHERE foo=20061219
061226 16:44:48\t     11 Quit       
";

#[test]
fn a_mysql_51_general_log_with_padded_commands_reads() {
    let (e, bad) = general(GENERAL_51.as_bytes());
    assert!(bad.is_empty(), "{bad:?}");
    assert_eq!(e.len(), 7, "{e:#?}");
    assert_eq!(
        e[0].what,
        What::Connect {
            db: Some("db1".into())
        }
    );
    assert_eq!(e[1].session, 42);
    assert!(query(&e[1]).starts_with("SELECT foo\n"), "{e:#?}");
    assert!(query(&e[1]).ends_with("WHERE col=12345"), "{e:#?}");
    assert_eq!(e[2].what, What::Quit);
    assert_eq!(e[3].what, What::Connect { db: None });
    assert_eq!(e[4].what, What::InitDb("my_webstats".into()));
    assert_eq!(
        query(&e[5]),
        "SELECT DISTINCT col FROM tbl WHERE foo=20061219"
    );
    assert_eq!((e[6].what.clone(), e[6].session), (What::Quit, 11));
}

#[test]
fn times_parse_in_both_families_formats() {
    assert_eq!(parse_time("241201 10:00:00"), Some(1_733_047_200_000_000));
    assert_eq!(parse_time("241201  9:59:59"), Some(1_733_047_199_000_000));
    assert_eq!(parse_time("1970-01-02T00:00:00Z"), Some(86_400_000_000));
    assert_eq!(parse_time("1970-01-01T00:00:00.5Z"), Some(500_000));
    assert_eq!(parse_time("not a time"), None);
}

#[test]
fn times_out_of_range_are_no_times() {
    assert_eq!(parse_time("99999999999-01-01T00:00:00Z"), None);
    assert_eq!(parse_time("2026-13-01T00:00:00Z"), None);
    assert_eq!(parse_time("261201 99999999999:00:00"), None);
    assert_eq!(parse_time("261201 10:61:00"), None);
    assert!(parse_time("2026-12-01T10:00:00.5Z").is_some());
    // A slow log's SET timestamp too large for µs is left out, not multiplied over.
    let log = b"# User@Host: a[a] @ localhost []\n# Thread_id: 5\n# Query_time: 0.1  Lock_time: 0.0  Rows_sent: 1  Rows_examined: 1\nSET timestamp=9223372036854775;\nSELECT 1;\n";
    let entries: Vec<Entry> = SlowLog::new(&log[..]).collect();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].at_us, None);
}

/// Logs whose tabs became spaces on the way (an editor, a ticket): MySQL 5.7's ISO time
/// before the id with spaces, MySQL 5.0's padded columns with no tab at all.
#[test]
fn general_logs_whose_tabs_became_spaces_read_the_same() {
    let iso = "2016-06-07T19:07:02.558338Z    3 Connect\tapp@localhost on  using Socket
2016-06-07T19:07:02.558713Z    3 Query\tSELECT 1
2016-06-07T19:07:02.563721Z    3 Quit\t
";
    let (e, bad) = general(iso.as_bytes());
    assert!(bad.is_empty(), "{bad:?}");
    assert_eq!(e.len(), 3, "{e:#?}");
    assert_eq!(query(&e[1]), "SELECT 1");
    assert_eq!(e[1].session, 3);
    assert_eq!(e[1].at_us, parse_time("2016-06-07T19:07:02.558713Z"));
    let padded = "100211  0:55:24      51 Query       SELECT category_id
                FROM map
                     51 Query       SELECT 2
";
    let (e, bad) = general(padded.as_bytes());
    assert!(bad.is_empty(), "{bad:?}");
    assert_eq!(e.len(), 2, "{e:#?}");
    assert_eq!(query(&e[0]), "SELECT category_id\n                FROM map");
    assert_eq!(query(&e[1]), "SELECT 2");
    assert_eq!(e[0].at_us, parse_time("100211  0:55:24"));
}

/// Slow-log entries without `# User@Host` (a log some tool wrote, or cut from a longer
/// one): each starts at its first header line, as pt-query-digest reads them.
#[test]
fn slow_log_entries_without_user_host_are_read() {
    let log = "# Time: 100624 11:48:27
# Query_time: 0.000012  Lock_time: 0.000000  Rows_sent: 3  Rows_examined: 0
SELECT * FROM `products` ORDER BY name;
# Thread_id: 7  Schema: shop
# Query_time: 0.726052  Lock_time: 0.100091  Rows_sent: 9  Rows_examined: 51
SELECT * FROM foo;
# Query_time: 0.1  Lock_time: 0.0  Rows_sent: 1  Rows_examined: 1
SELECT 1;
";
    let mut r = SlowLog::new(log.as_bytes());
    let e: Vec<Entry> = r.by_ref().collect();
    assert!(r.malformed.first.is_empty(), "{:?}", r.malformed.first);
    let statements: Vec<(u64, &str, Option<u64>)> = e
        .iter()
        .filter_map(|e| match &e.what {
            What::Query(s) => Some((e.session, s.as_str(), e.rows)),
            _ => None,
        })
        .collect();
    assert_eq!(
        statements,
        vec![
            (0, "SELECT * FROM `products` ORDER BY name", Some(3)),
            (7, "SELECT * FROM foo", Some(9)),
            (0, "SELECT 1", Some(1)),
        ]
    );
    assert!(e.iter().any(|e| e.what == What::InitDb("shop".into())));
    assert_eq!(e[0].at_us, parse_time("100624 11:48:27"));
}

/// Issue 50: a slow log that begins inside an entry (its first lines the tail of a header
/// and statement, the `# Query_time` line cut off) leaves that entry out, as pt-query-digest
/// does, where it was read as a statement of its own.
#[test]
fn a_slow_log_that_begins_inside_an_entry_leaves_that_entry_out() {
    let log = b" Rows_examined: 1\n# Rows_affected: 0  Bytes_sent: 0\nSET timestamp=1796378399;\nSELECT 0 FROM t WHERE a = 1;\n# Time: 2026-12-04T10:00:00.000000Z\n# User@Host: app[app] @ localhost []\n# Thread_id: 5  Schema: shop  QC_hit: No\n# Query_time: 0.000100  Lock_time: 0.000010  Rows_sent: 1  Rows_examined: 1\nSET timestamp=1796378400;\nSELECT 1 FROM t WHERE a = 1;\n";
    let mut reader = SlowLog::new(&log[..]);
    let statements: Vec<String> = reader
        .by_ref()
        .filter_map(|e| match e.what {
            What::Query(q) => Some(q),
            _ => None,
        })
        .collect();
    assert_eq!(statements, ["SELECT 1 FROM t WHERE a = 1"]);
    assert!(reader.malformed.count >= 1);
}

/// Issue 50: MariaDB's slow log with log_slow_verbosity=explain writes the plan in the
/// header, between `#` lines: the statement is the one after `SET timestamp`, not the
/// lone `#`.
#[test]
fn a_mariadb_slow_log_with_explain_lines_reads_its_statements() {
    let log = "# Time: 231204 10:00:00\n# User@Host: root[root] @ localhost []\n# Thread_id: 8  Schema: test  QC_hit: No\n# Query_time: 0.000170  Lock_time: 0.000053  Rows_sent: 3  Rows_examined: 3\n# Rows_affected: 0  Bytes_sent: 91\n#\n# explain: id\tselect_type\ttable\ttype\tpossible_keys\tkey\tkey_len\tref\trows\tr_rows\tfiltered\tr_filtered\tExtra\n# explain: 1\tSIMPLE\tt1\tALL\tNULL\tNULL\tNULL\tNULL\t3\t3.00\t100.00\t100.00\t\n#\nSET timestamp=1701684000;\nselect * from t1;\n# User@Host: root[root] @ localhost []\n# Thread_id: 8  Schema: test  QC_hit: No\n# Query_time: 0.000100  Lock_time: 0.000050  Rows_sent: 1  Rows_examined: 1\n# Rows_affected: 0  Bytes_sent: 60\n#\n# explain: id\tselect_type\ttable\ttype\n# explain: 1\tSIMPLE\tNULL\tNULL\n#\nSET timestamp=1701684001;\nselect 1;\n";
    let mut reader = SlowLog::new(log.as_bytes());
    let statements: Vec<(String, Option<u64>)> = reader
        .by_ref()
        .filter_map(|e| match e.what {
            What::Query(q) => Some((q, e.rows)),
            _ => None,
        })
        .collect();
    assert_eq!(
        statements,
        [
            ("select * from t1".to_string(), Some(3)),
            ("select 1".to_string(), Some(1))
        ]
    );
    assert_eq!(reader.malformed.count, 0);
}
