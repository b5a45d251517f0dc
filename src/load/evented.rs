//! The event loop: one thread drives many lean connections through non-blocking sockets and
//! epoll, as pgbench's threads do with ppoll. Each connection's event is encoded ahead of
//! time (`Client::plan`) and its requests sent one at a time, each after the previous one's
//! answer (a failure inside a transaction is followed by ROLLBACK, as the blocking client
//! does). Latency is timed per event from its send (in rate mode from its intended start)
//! to the last byte of its last answer; the thread keeps one report, merged exactly with the
//! others'. In rate mode the wait for the earliest intended start among idle connections is
//! epoll's own timeout (nanoseconds, `epoll_pwait2`): the thread wakes once for whichever
//! comes first, an answer or a start.

use super::worker::{
    NAP, PHASE_MEASURE, PHASE_STOP, Sent, Shared, WorkerReport, WorkerSetup, late, precise_sleep,
};
use crate::rng::Rng;
use crate::server::Connector;
use crate::workload::Client;
use crate::workload::session::DbError;
use crate::workload::wire::{Request, Requests, Step, closed, io_lost};
use std::io::{ErrorKind, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// One connection as the loop sees it.
struct Slot {
    setup: WorkerSetup,
    client: Client,
    rng: Rng,
    requests: Requests,
    /// The request in flight (an index into `requests`), and its bytes written so far.
    current: usize,
    written: usize,
    /// An event is in flight.
    busy: bool,
    /// A ROLLBACK after a failure is in flight; the failure is reported once it answers.
    failure: Option<DbError>,
    rollback: Vec<u8>,
    /// Statements of the event in flight.
    statements: u32,
    sent: Option<Sent>,
    measuring: bool,
    /// Rate mode: the next intended start.
    due: Option<Instant>,
    /// Events done (any phase), for the progress counter.
    all_events: u64,
    /// The quota is met, or the connection is lost for good.
    done: bool,
}

/// epoll, level-triggered: readable always, writable while a request is half written.
struct Poller(i32);

impl Poller {
    fn new() -> std::io::Result<Poller> {
        // SAFETY: epoll_create1 takes flags only.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Poller(fd))
    }

    fn ctl(&self, op: i32, fd: i32, key: usize, write: bool) {
        let events = libc::EPOLLIN | if write { libc::EPOLLOUT } else { 0 };
        let mut ev = libc::epoll_event {
            events: events as u32,
            u64: key as u64,
        };
        // SAFETY: a valid epoll fd, a socket fd we own, an event that lives for the call.
        unsafe { libc::epoll_ctl(self.0, op, fd, &mut ev) };
    }

    /// Wait at most `timeout` for ready sockets; returns how many of `events` are filled.
    fn wait(&self, events: &mut [libc::epoll_event], timeout: Duration) -> usize {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `events` is writable for its length; no signal mask is changed.
        let n = unsafe {
            libc::epoll_pwait2(
                self.0,
                events.as_mut_ptr(),
                events.len() as i32,
                &ts,
                std::ptr::null(),
            )
        };
        n.max(0) as usize
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        // SAFETY: the fd is ours and closed once.
        unsafe { libc::close(self.0) };
    }
}

/// Whether every client can run under the event loop (lean connections, not TLS).
pub fn can_run(clients: &mut [Client]) -> bool {
    clients
        .iter_mut()
        .all(|c| c.conn().is_some_and(|c| !c.stream.is_tls()))
}

/// Run these clients on this thread until the phase says stop (each until its quota in
/// queries mode); one report for them all.
pub fn run(
    clients: Vec<(WorkerSetup, Client)>,
    connector: &Connector,
    shared: &Shared,
) -> WorkerReport {
    let open = clients.first().is_some_and(|(s, _)| s.schedule.is_some());
    let mut report = WorkerReport::empty(open);
    let poller = match Poller::new() {
        Ok(p) => p,
        Err(e) => {
            report.fatal = Some(format!("cannot start the event loop: {e}"));
            finish_all(shared, clients.len());
            return report;
        }
    };
    if open {
        precise_sleep();
    }
    let mut slots: Vec<Slot> = clients
        .into_iter()
        .map(|(mut setup, client)| {
            let due = setup
                .schedule
                .as_mut()
                .map(|s| setup.t0 + Duration::from_nanos(s.next_start()));
            Slot {
                rng: Rng::from_time(setup.index as u64 + 1),
                setup,
                client,
                requests: Requests::default(),
                current: 0,
                written: 0,
                busy: false,
                failure: None,
                rollback: vec![],
                statements: 0,
                sent: None,
                measuring: false,
                due,
                all_events: 0,
                done: false,
            }
        })
        .collect();
    for (key, slot) in slots.iter_mut().enumerate() {
        attach(&poller, key, slot, &mut report, shared);
    }
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; slots.len().clamp(1, 256)];
    loop {
        let phase = shared.phase.load(Ordering::Relaxed);
        if phase == PHASE_STOP {
            break;
        }
        // Start what is due: every idle connection in closed loop, at its time in rate mode.
        let now = Instant::now();
        let mut wake = now + NAP;
        let mut live = false;
        for (key, slot) in slots.iter_mut().enumerate() {
            if slot.done {
                continue;
            }
            live = true;
            // (In rate mode a skipped event moves the slot on to its next start.)
            while !slot.busy && !slot.done {
                match slot.due {
                    Some(at) if at > now => {
                        wake = wake.min(at);
                        break;
                    }
                    _ => start(&poller, key, slot, phase, shared, &mut report, connector),
                }
            }
        }
        if !live {
            break;
        }
        let n = poller.wait(&mut events, wake.saturating_duration_since(Instant::now()));
        for ev in &events[..n] {
            let key = ev.u64 as usize;
            let slot = &mut slots[key];
            if slot.done {
                continue;
            }
            if !slot.busy {
                idle_readable(&poller, key, slot, shared, &mut report, connector);
                continue;
            }
            if ev.events & libc::EPOLLOUT as u32 != 0
                && let Err(e) = flush(&poller, key, slot)
            {
                fail(&poller, key, slot, e, shared, &mut report, connector);
                continue;
            }
            if ev.events & (libc::EPOLLIN | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0 {
                readable(&poller, key, slot, shared, &mut report, connector);
            }
        }
    }
    let left = slots.iter().filter(|s| !s.done).count();
    finish_all(shared, left);
    report
}

fn finish_all(shared: &Shared, n: usize) {
    shared.finished.fetch_add(n, Ordering::Release);
}

/// Register a slot's socket, non-blocking (a failure ends the slot, reported).
fn attach(
    poller: &Poller,
    key: usize,
    slot: &mut Slot,
    report: &mut WorkerReport,
    shared: &Shared,
) {
    let conn = slot
        .client
        .conn()
        .expect("the event loop runs lean clients only");
    let fd = conn.stream.as_raw_fd();
    if let Err(e) = conn.stream.set_nonblocking(true) {
        end(
            slot,
            shared,
            report,
            format!("cannot make the socket non-blocking: {e}"),
        );
        return;
    }
    poller.ctl(libc::EPOLL_CTL_ADD, fd, key, false);
}

/// A slot that cannot go on: its reason is the report's fatal error.
fn end(slot: &mut Slot, shared: &Shared, report: &mut WorkerReport, why: String) {
    slot.done = true;
    slot.busy = false;
    report.fatal.get_or_insert(why);
    shared.finished.fetch_add(1, Ordering::Release);
}

/// Begin the slot's next event: plan it, send its first request.
fn start(
    poller: &Poller,
    key: usize,
    slot: &mut Slot,
    phase: u8,
    shared: &Shared,
    report: &mut WorkerReport,
    connector: &Connector,
) {
    let intended = slot.due;
    let now = Instant::now();
    slot.measuring = phase == PHASE_MEASURE;
    if let Some(s) = slot.setup.schedule.as_mut() {
        slot.due = Some(slot.setup.t0 + Duration::from_nanos(s.next_start()));
    }
    if late(report, shared, &slot.setup, intended, now, slot.measuring) {
        return;
    }
    let Some(n) = slot.client.plan(&mut slot.rng, &mut slot.requests) else {
        end(
            slot,
            shared,
            report,
            "a client could not plan its event".into(),
        );
        return;
    };
    slot.statements = n;
    slot.sent = Some(Sent {
        t0: slot.setup.t0,
        intended,
        start: now,
    });
    slot.busy = true;
    slot.current = 0;
    slot.failure = None;
    send(poller, key, slot, shared, report, connector);
}

/// Write the current request (or the ROLLBACK) from where it stopped.
fn send(
    poller: &Poller,
    key: usize,
    slot: &mut Slot,
    shared: &Shared,
    report: &mut WorkerReport,
    connector: &Connector,
) {
    slot.written = 0;
    slot.client
        .conn()
        .expect("lean")
        .protocol
        .expect(Request::Run);
    if let Err(e) = flush(poller, key, slot) {
        fail(poller, key, slot, e, shared, report, connector);
    }
}

/// Write what is left of the request; watch for writability while some is.
fn flush(poller: &Poller, key: usize, slot: &mut Slot) -> Result<(), DbError> {
    let bytes = if slot.failure.is_some() {
        &slot.rollback[..]
    } else {
        slot.requests.get(slot.current)
    };
    let conn = slot.client.conn().expect("lean");
    let was_partial = slot.written > 0;
    while slot.written < bytes.len() {
        match conn.stream.write(&bytes[slot.written..]) {
            Ok(0) => return Err(closed()),
            Ok(n) => slot.written += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if !was_partial {
                    poller.ctl(libc::EPOLL_CTL_MOD, conn.stream.as_raw_fd(), key, true);
                }
                return Ok(());
            }
            Err(e) => return Err(io_lost(e)),
        }
    }
    if was_partial {
        poller.ctl(libc::EPOLL_CTL_MOD, conn.stream.as_raw_fd(), key, false);
    }
    Ok(())
}

/// Read what arrived; move the event on when its answer is complete.
fn readable(
    poller: &Poller,
    key: usize,
    slot: &mut Slot,
    shared: &Shared,
    report: &mut WorkerReport,
    connector: &Connector,
) {
    let conn = slot.client.conn().expect("lean");
    let step = loop {
        match conn.inbox.fill(&mut conn.stream) {
            Ok(0) => break Step::Done(Err(closed())),
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return,
            Err(e) => break Step::Done(Err(io_lost(e))),
        }
        if let Step::Done(r) = conn.inbox.feed(conn.protocol.as_mut()) {
            break Step::Done(r);
        }
    };
    let Step::Done(outcome) = step else { return };
    match outcome {
        Err(e) if e.lost() => fail(poller, key, slot, e, shared, report, connector),
        Err(e) if slot.failure.is_none() && slot.requests.transaction => {
            // Roll back, then report the statement's own error.
            slot.failure = Some(e);
            slot.rollback.clear();
            let conn = slot.client.conn().expect("lean");
            conn.protocol.simple("ROLLBACK", &mut slot.rollback);
            send(poller, key, slot, shared, report, connector);
        }
        Err(e) => complete(slot, shared, report, Err(e)),
        Ok(()) if slot.failure.is_some() => {
            let e = slot.failure.take().expect("checked");
            complete(slot, shared, report, Err(e));
        }
        Ok(()) if slot.current + 1 < slot.requests.ends.len() => {
            slot.current += 1;
            send(poller, key, slot, shared, report, connector);
        }
        Ok(()) => complete(slot, shared, report, Ok(())),
    }
    // Closed loop: the next event at once, without waiting for the loop's next turn.
    if !slot.busy && !slot.done && slot.due.is_none() {
        let phase = shared.phase.load(Ordering::Relaxed);
        if phase != PHASE_STOP {
            start(poller, key, slot, phase, shared, report, connector);
        }
    }
}

/// Something arrived on a connection between events: a notice is kept for the next answer's
/// parser; a closed connection (the server went away, or killed an idle session) is made
/// again, no event failed. (Level-triggered epoll would otherwise report it for ever.)
fn idle_readable(
    poller: &Poller,
    key: usize,
    slot: &mut Slot,
    shared: &Shared,
    report: &mut WorkerReport,
    connector: &Connector,
) {
    let conn = slot.client.conn().expect("lean");
    let why = match conn.inbox.fill(&mut conn.stream) {
        Ok(0) => closed().message,
        Ok(_) => return,
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => return,
        Err(e) => io_lost(e).message,
    };
    detach(poller, key, slot);
    reconnect(poller, key, slot, shared, report, connector, &why);
}

/// The event is over: count it.
fn complete(
    slot: &mut Slot,
    shared: &Shared,
    report: &mut WorkerReport,
    outcome: Result<(), DbError>,
) {
    slot.busy = false;
    let mut counted = 0;
    if slot.measuring {
        match outcome {
            Ok(()) => {
                let sent = slot.sent.expect("sent before answered");
                sent.count(report, shared, slot.statements, Instant::now());
                counted = u64::from(slot.statements);
            }
            Err(e) => {
                // Counted against the quota too: a statement that always fails must end.
                *report.errors.entry(e.message).or_default() += 1;
                counted = 1;
            }
        }
    }
    slot.all_events += 1;
    shared.events[slot.setup.index]
        .0
        .store(slot.all_events, Ordering::Relaxed);
    // Queries mode: what is left of this connection's quota of measured statements.
    if let Some(q) = slot.setup.quota.as_mut() {
        *q = q.saturating_sub(counted);
        if *q == 0 {
            slot.done = true;
            shared.finished.fetch_add(1, Ordering::Release);
        }
    }
}

/// The connection is lost: count the event's failure, connect again (blocking; rare), or
/// end the slot when that fails too.
fn fail(
    poller: &Poller,
    key: usize,
    slot: &mut Slot,
    e: DbError,
    shared: &Shared,
    report: &mut WorkerReport,
    connector: &Connector,
) {
    // Out of epoll first: a closed socket would be reported on every wait, done or not.
    detach(poller, key, slot);
    slot.failure = None;
    let why = format!("connection lost: {}", e.message);
    complete(slot, shared, report, Err(e));
    if !slot.done {
        reconnect(poller, key, slot, shared, report, connector, &why);
    }
}

/// Take a slot's socket out of epoll.
fn detach(poller: &Poller, key: usize, slot: &mut Slot) {
    if let Some(conn) = slot.client.conn() {
        poller.ctl(libc::EPOLL_CTL_DEL, conn.stream.as_raw_fd(), key, false);
    }
}

/// Replace a slot's closed connection (`why`), already out of epoll: connect again
/// (blocking; rare) and register the new one, or end the slot when that fails too.
fn reconnect(
    poller: &Poller,
    key: usize,
    slot: &mut Slot,
    shared: &Shared,
    report: &mut WorkerReport,
    connector: &Connector,
    why: &str,
) {
    match connector.connect() {
        Ok(c) => {
            slot.client = c;
            attach(poller, key, slot, report, shared);
        }
        Err(e) => end(slot, shared, report, format!("{why}; reconnect: {e}")),
    }
}
