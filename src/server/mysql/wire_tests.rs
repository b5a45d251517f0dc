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
        let mut p = MyWire::new(false);
        p.expect(Request::Run);
        let (outcome, used) = drive(&mut p, &both, chunk).expect("completes");
        assert!(outcome.is_ok(), "{chunk}");
        assert_eq!(used, answer.len(), "{chunk}");
    }
}

#[test]
fn a_row_over_16_mb_continues_in_the_next_packet() {
    let answer = result_set(&[MAX_PAYLOAD + 100], 2);
    let mut p = MyWire::new(false);
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
    let mut p = MyWire::new(false);
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
    let mut p = MyWire::new(false);
    p.expect(Request::Prepare);
    let (outcome, used) = drive(&mut p, &a, 1).unwrap();
    assert!(outcome.is_ok());
    assert_eq!(used, a.len());
    assert_eq!(p.prepared(), 0);
    assert_eq!(p.statements[0], (7, 2));
    let mut out = vec![];
    p.execute(0, &[Value::Int(5), Value::Text("ab")], &mut out);
    // header, command, id, flags, iterations, null bitmap, bound, 2 types, i64, "ab"
    assert_eq!(out.len(), 4 + 1 + 4 + 1 + 4 + 1 + 1 + 4 + 8 + 3);
    assert_eq!(out[4], COM_STMT_EXECUTE);
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
            let mut p = MyWire::new(true);
            p.expect(Request::Run);
            let (outcome, used) = drive(&mut p, &next, chunk).expect("completes");
            assert!(outcome.is_ok(), "{chunk}");
            assert_eq!(used, answer.len(), "{chunk}");
        }
    }
    // Read as if nothing were cached, the answer would wait for definitions never sent.
    let mut p = MyWire::new(false);
    p.expect(Request::Run);
    assert!(drive(&mut p, &cached, 1).is_none());
}
