//! The MySQL lean client's answer parser, fed as a socket might deliver bytes.

use super::*;
use crate::client::lean::drive;

fn pk(payload: &[u8]) -> Vec<u8> {
    let mut out = vec![];
    let mut rest = payload;
    loop {
        let n = rest.len().min(MAX_PAYLOAD);
        out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        out.push(0);
        out.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        if n < MAX_PAYLOAD {
            return out;
        }
    }
}

const EOF: [u8; 5] = [0xFE, 0, 0, 2, 0];

fn result_set(rows: &[usize], last_status: u16) -> Vec<u8> {
    let mut a = pk(&[1]);
    a.extend(pk(
        b"\x03def\x00\x00\x00\x01c\x00\x0c\x21\x00\xff\xff\x00\x00\xfd\x00\x00\x00\x00\x00",
    ));
    a.extend(pk(&EOF));
    for &len in rows {
        let mut row = vec![0xFE];
        row.extend_from_slice(&(len as u64).to_le_bytes());
        row.resize(9 + len, b'x');
        a.extend(pk(&row));
    }
    let s = last_status.to_le_bytes();
    a.extend(pk(&[0xFE, 0, 0, s[0], s[1]]));
    a
}

#[test]
fn a_result_set_completes_at_its_last_eof_however_it_arrives() {
    let answer = result_set(&[3, 2_000_000], 2);
    let mut both = answer.clone();
    both.extend(pk(&[0, 0, 0, 2, 0, 0, 0]));
    for chunk in [1, 5, 4096, both.len()] {
        let mut p = MyWire::new(QueryMode::Prepared, false);
        p.expect(Request::Run);
        let (outcome, used) = drive(&mut p, &both, chunk).expect("completes");
        assert!(outcome.is_ok(), "{chunk}");
        assert_eq!(used, answer.len(), "{chunk}");
    }
}

#[test]
fn a_row_over_16_mb_continues_in_the_next_packet() {
    let answer = result_set(&[MAX_PAYLOAD + 100], 2);
    let mut p = MyWire::new(QueryMode::Prepared, false);
    p.expect(Request::Run);
    let (outcome, used) = drive(&mut p, &answer, 1 << 20).unwrap();
    assert!(outcome.is_ok());
    assert_eq!(used, answer.len());
}

#[test]
fn more_results_are_read_to_the_last_and_errors_end_the_answer() {
    // OK with "more results", then a result set: one answer.
    let mut answer = pk(&[0, 0, 0, 0x0A, 0, 0, 0]);
    answer.extend(result_set(&[4], 2));
    let mut p = MyWire::new(QueryMode::Prepared, false);
    p.expect(Request::Run);
    let (outcome, used) = drive(&mut p, &answer, 3).unwrap();
    assert!(outcome.is_ok());
    assert_eq!(used, answer.len());
    let err = pk(b"\xff\xe2\x04#21000Subquery returns more than 1 row");
    let mut mid_rows = result_set(&[4], 2);
    mid_rows.truncate(mid_rows.len() - 9);
    mid_rows.extend(&err);
    for bytes in [&err, &mid_rows] {
        p.expect(Request::Run);
        let (outcome, _) = drive(&mut p, bytes, 1).unwrap();
        let e = outcome.unwrap_err();
        assert_eq!(e.message, "Subquery returns more than 1 row (error 1250)");
    }
    let killed = pk(b"\xff\x87\x07#70100Connection was killed");
    p.expect(Request::Run);
    assert!(drive(&mut p, &killed, 2).unwrap().0.unwrap_err().lost());
}

#[test]
fn a_prepare_answer_names_the_statement_and_its_parameters() {
    let mut a = pk(&[0, 7, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0]);
    for _ in 0..2 {
        a.extend(pk(
            b"\x03def\x00\x00\x00\x01?\x00\x0c\x3f\x00\x00\x00\x00\x00\xfd\x80\x00\x00\x00\x00",
        ));
    }
    a.extend(pk(&EOF));
    a.extend(pk(
        b"\x03def\x00\x00\x00\x01c\x00\x0c\x21\x00\xff\xff\x00\x00\xfd\x00\x00\x00\x00\x00",
    ));
    a.extend(pk(&EOF));
    let mut p = MyWire::new(QueryMode::Prepared, false);
    p.expect(Request::Prepare);
    let (outcome, used) = drive(&mut p, &a, 1).unwrap();
    assert!(outcome.is_ok());
    assert_eq!(used, a.len());
    assert_eq!(p.prepared(), 0);
    assert!(matches!(
        p.statements[0],
        Statement::Server {
            id: 7,
            params: 2,
            ..
        }
    ));
    let mut out = vec![];
    p.execute(0, &[Value::Int(5), Value::Text("ab")], &mut out);
    // header, command, id, flags, iterations, null bitmap, bound, 2 types, i64, "ab"
    assert_eq!(out.len(), 4 + 1 + 4 + 1 + 4 + 1 + 1 + 4 + 8 + 3);
    assert_eq!(out[4], COM_STMT_EXECUTE);
}

/// A statement prepared on the server as id 7 with `params` placeholders.
fn prepared(params: u16) -> MyWire {
    let mut p = MyWire::new(QueryMode::Prepared, false);
    p.statements.push(Statement::Server {
        id: 7,
        params,
        sent_types: vec![],
    });
    p
}

/// The new-params-bound flag of an execution of a one-parameter statement, and its length.
fn bound_flag(p: &mut MyWire, v: Value<'_>) -> (u8, usize) {
    let mut out = vec![];
    p.execute(0, &[v], &mut out);
    // header 4, command, id 4, flags, iterations 4, null bitmap 1: the flag
    (out[4 + 1 + 4 + 1 + 4 + 1], out.len())
}

#[test]
fn parameter_types_go_with_the_first_execution_and_when_they_change() {
    // libmariadb's mysql_stmt_execute: types once, then only the values (the server keeps
    // the conversions it set up); sysbench's point select is 26 bytes, then 24.
    let mut p = prepared(1);
    assert_eq!(bound_flag(&mut p, Value::Int(1)), (1, 26));
    assert_eq!(bound_flag(&mut p, Value::Int(2)), (0, 24));
    assert_eq!(bound_flag(&mut p, Value::Text("x")).0, 1);
    assert_eq!(bound_flag(&mut p, Value::Text("y")).0, 0);
    assert_eq!(bound_flag(&mut p, Value::Null).0, 1);
}

#[test]
fn after_an_error_every_statement_sends_its_types_again() {
    // An event's requests are encoded ahead: after a failure the rest were never sent, and
    // one of them may have been a statement's first execution.
    let mut p = prepared(1);
    assert_eq!(bound_flag(&mut p, Value::Int(1)).0, 1);
    assert_eq!(bound_flag(&mut p, Value::Int(2)).0, 0);
    p.expect(Request::Run);
    let err = pk(b"\xff\x28\x05#40001Deadlock found");
    assert!(drive(&mut p, &err, 4).unwrap().0.is_err());
    assert_eq!(bound_flag(&mut p, Value::Int(3)).0, 1);
}

#[test]
fn the_text_mode_writes_the_values_into_one_com_query() {
    let mut p = MyWire::new(QueryMode::Text, true);
    let mut out = vec![];
    p.prepare(
        "SELECT c FROM t WHERE id=? AND c=? AND pad=? AND k=?",
        &mut out,
    );
    assert!(out.is_empty(), "nothing is prepared on the server");
    assert_eq!(p.prepared(), 0);
    let values = [
        Value::Int(-42),
        Value::Text("it's"),
        Value::Text("a\\b"),
        Value::Null,
    ];
    p.execute(0, &values, &mut out);
    assert_eq!(out[4], COM_QUERY);
    assert_eq!(
        String::from_utf8_lossy(&out[5..]),
        "SELECT c FROM t WHERE id=-42 AND c='it''s' AND pad=X'615c62' AND k=NULL"
    );
    assert_eq!(
        out.len() - 4,
        u32::from_le_bytes([out[0], out[1], out[2], 0]) as usize
    );
}

#[test]
fn with_cached_metadata_an_executed_result_skips_only_what_the_server_sent() {
    // MARIADB_CLIENT_CACHE_METADATA: 3 columns, "no metadata" (0), the EOF, a row, the EOF.
    let mut cached = pk(&[3, 0]);
    cached.extend(pk(&EOF));
    cached.extend(pk(b"\x06xxxxxx\x06yyyyyy\x06zzzzzz"));
    cached.extend(pk(&EOF));
    // The definitions changed: count 1, "metadata follows" (1), then as without the cache.
    let mut sent = pk(&[1, 1]);
    sent.extend_from_slice(&result_set(&[3], 2)[5..]);
    for answer in [&cached, &sent] {
        let mut next = answer.clone();
        next.extend(pk(&[0, 0, 0, 2, 0, 0, 0]));
        for chunk in [1, 3, next.len()] {
            let mut p = MyWire::new(QueryMode::Prepared, true);
            p.expect(Request::Run);
            let (outcome, used) = drive(&mut p, &next, chunk).expect("completes");
            assert!(outcome.is_ok(), "{chunk}");
            assert_eq!(used, answer.len(), "{chunk}");
        }
    }
    // Read as if nothing were cached, the answer would wait for definitions never sent.
    let mut p = MyWire::new(QueryMode::Prepared, false);
    p.expect(Request::Run);
    assert!(drive(&mut p, &cached, 1).is_none());
}
