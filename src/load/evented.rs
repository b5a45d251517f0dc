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
use crate::client::connection::DbError;
use crate::client::lean::{Request, Requests, Step, closed, io_lost};
use crate::rng::Rng;
use crate::server::Connector;
use crate::workload::Client;
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

/// One loop thread's shared parts: its epoll, the trial's shared state, what reconnects,
/// and the one report of all its connections.
struct Thread<'a> {
    poller: Poller,
    shared: &'a Shared,
    connector: &'a Connector,
    report: WorkerReport,
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
            shared.finished.fetch_add(clients.len(), Ordering::Release);
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
    let mut t = Thread {
        poller,
        shared,
        connector,
        report,
    };
    for (key, slot) in slots.iter_mut().enumerate() {
        t.attach(key, slot);
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
                    _ => t.start(key, slot, phase),
                }
            }
        }
        if !live {
            break;
        }
        let n = t
            .poller
            .wait(&mut events, wake.saturating_duration_since(Instant::now()));
        for ev in &events[..n] {
            let key = ev.u64 as usize;
            let slot = &mut slots[key];
            if slot.done {
                continue;
            }
            if !slot.busy {
                t.idle_readable(key, slot);
                continue;
            }
            if ev.events & libc::EPOLLOUT as u32 != 0
                && let Err(e) = t.flush(key, slot)
            {
                t.fail(key, slot, e);
                continue;
            }
            if ev.events & (libc::EPOLLIN | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0 {
                t.readable(key, slot);
            }
        }
    }
    let left = slots.iter().filter(|s| !s.done).count();
    shared.finished.fetch_add(left, Ordering::Release);
    t.report
}

impl Thread<'_> {
    /// Register a slot's socket, non-blocking (a failure ends the slot, reported).
    fn attach(&mut self, key: usize, slot: &mut Slot) {
        let conn = slot
            .client
            .conn()
            .expect("the event loop runs lean clients only");
        let fd = conn.stream.as_raw_fd();
        if let Err(e) = conn.stream.set_nonblocking(true) {
            self.end(slot, format!("cannot make the socket non-blocking: {e}"));
            return;
        }
        self.poller.ctl(libc::EPOLL_CTL_ADD, fd, key, false);
    }

    /// Take a slot's socket out of epoll.
    fn detach(&self, key: usize, slot: &mut Slot) {
        if let Some(conn) = slot.client.conn() {
            self.poller
                .ctl(libc::EPOLL_CTL_DEL, conn.stream.as_raw_fd(), key, false);
        }
    }

    /// A slot that cannot go on: its reason is the report's fatal error.
    fn end(&mut self, slot: &mut Slot, why: String) {
        slot.done = true;
        slot.busy = false;
        self.report.fatal.get_or_insert(why);
        self.shared.finished.fetch_add(1, Ordering::Release);
    }

    /// Begin the slot's next event: plan it, send its first request.
    fn start(&mut self, key: usize, slot: &mut Slot, phase: u8) {
        let intended = slot.due;
        let now = Instant::now();
        slot.measuring = phase == PHASE_MEASURE;
        if let Some(s) = slot.setup.schedule.as_mut() {
            slot.due = Some(slot.setup.t0 + Duration::from_nanos(s.next_start()));
        }
        let shared = self.shared;
        if late(
            &mut self.report,
            shared,
            &slot.setup,
            intended,
            now,
            slot.measuring,
        ) {
            slot.client.skip();
            return;
        }
        let Some(n) = slot.client.plan(&mut slot.rng, &mut slot.requests) else {
            self.end(slot, "a client could not plan its event".into());
            return;
        };
        slot.statements = n;
        slot.sent = Some(Sent {
            t0: slot.setup.t0,
            intended,
            start: now,
            tag: slot.client.tag(),
        });
        slot.busy = true;
        slot.current = 0;
        slot.failure = None;
        self.send(key, slot);
    }

    /// Write the current request (or the ROLLBACK) from where it stopped.
    fn send(&mut self, key: usize, slot: &mut Slot) {
        slot.written = 0;
        slot.client
            .conn()
            .expect("lean")
            .protocol
            .expect(Request::Run);
        match self.flush(key, slot) {
            Ok(()) => {}
            // Closed while idle, noticed only now (a busy machine wakes the loop late): not
            // a byte of this event reached the server, so nothing failed. Connect again and
            // send the event there.
            Err(e)
                if e.lost() && slot.current == 0 && slot.written == 0 && slot.failure.is_none() =>
            {
                self.detach(key, slot);
                self.reconnect(key, slot, &format!("connection lost: {}", e.message));
                if slot.done {
                    return;
                }
                let Some(n) = slot.client.plan(&mut slot.rng, &mut slot.requests) else {
                    self.end(slot, "a client could not plan its event".into());
                    return;
                };
                slot.statements = n;
                slot.client
                    .conn()
                    .expect("lean")
                    .protocol
                    .expect(Request::Run);
                if let Err(e) = self.flush(key, slot) {
                    self.fail(key, slot, e);
                }
            }
            Err(e) => self.fail(key, slot, e),
        }
    }

    /// Write what is left of the request; watch for writability while some is.
    fn flush(&self, key: usize, slot: &mut Slot) -> Result<(), DbError> {
        let bytes = if slot.failure.is_some() {
            &slot.rollback[..]
        } else {
            slot.requests.get(slot.current)
        };
        let conn = slot.client.conn().expect("lean");
        let fd = conn.stream.as_raw_fd();
        let was_partial = slot.written > 0;
        while slot.written < bytes.len() {
            match conn.stream.write(&bytes[slot.written..]) {
                Ok(0) => return Err(closed()),
                Ok(n) => slot.written += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if !was_partial {
                        self.poller.ctl(libc::EPOLL_CTL_MOD, fd, key, true);
                    }
                    return Ok(());
                }
                Err(e) => return Err(io_lost(e)),
            }
        }
        if was_partial {
            self.poller.ctl(libc::EPOLL_CTL_MOD, fd, key, false);
        }
        Ok(())
    }

    /// Read what arrived; move the event on when its answer is complete.
    fn readable(&mut self, key: usize, slot: &mut Slot) {
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
            Err(e) if e.lost() => self.fail(key, slot, e),
            Err(e) if slot.failure.is_none() && slot.requests.transaction => {
                // Roll back, then report the statement's own error.
                slot.failure = Some(e);
                slot.rollback.clear();
                let conn = slot.client.conn().expect("lean");
                conn.protocol.simple("ROLLBACK", &mut slot.rollback);
                self.send(key, slot);
            }
            Err(e) => self.complete(slot, Err(e)),
            Ok(()) if slot.failure.is_some() => {
                let e = slot.failure.take().expect("checked");
                self.complete(slot, Err(e));
            }
            Ok(()) if slot.current + 1 < slot.requests.ends.len() => {
                slot.current += 1;
                self.send(key, slot);
            }
            Ok(()) => self.complete(slot, Ok(())),
        }
        // Closed loop: the next event at once, without waiting for the loop's next turn.
        if !slot.busy && !slot.done && slot.due.is_none() {
            let phase = self.shared.phase.load(Ordering::Relaxed);
            if phase != PHASE_STOP {
                self.start(key, slot, phase);
            }
        }
    }

    /// Something arrived on a connection between events: a notice is kept for the next
    /// answer's parser; a closed connection (the server went away, or killed an idle
    /// session) is made again, no event failed. (Level-triggered epoll would otherwise
    /// report it for ever.)
    fn idle_readable(&mut self, key: usize, slot: &mut Slot) {
        let conn = slot.client.conn().expect("lean");
        let why = match conn.inbox.fill(&mut conn.stream) {
            Ok(0) => closed().message,
            Ok(_) => return,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                return;
            }
            Err(e) => io_lost(e).message,
        };
        self.detach(key, slot);
        self.reconnect(key, slot, &why);
    }

    /// The event is over: count it.
    fn complete(&mut self, slot: &mut Slot, outcome: Result<(), DbError>) {
        slot.busy = false;
        let mut counted = 0;
        if slot.measuring {
            match outcome {
                Ok(()) => {
                    let sent = slot.sent.expect("sent before answered");
                    sent.count(
                        &mut self.report,
                        self.shared,
                        slot.statements,
                        Instant::now(),
                    );
                    counted = u64::from(slot.statements);
                    if let Some(tag) = sent.tag
                        && slot.client.rows_differ()
                    {
                        self.report.tagged_rows_off(tag);
                    }
                }
                Err(e) => {
                    // Counted against the quota too: a statement that always fails must end.
                    *self.report.errors.entry(e.message).or_default() += 1;
                    if let Some(tag) = slot.sent.and_then(|s| s.tag) {
                        self.report.tagged_error(tag);
                    }
                    counted = 1;
                }
            }
        }
        slot.all_events += 1;
        self.shared.events[slot.setup.index]
            .0
            .store(slot.all_events, Ordering::Relaxed);
        // Queries mode: what is left of this connection's quota of measured statements.
        if let Some(q) = slot.setup.quota.as_mut() {
            *q = q.saturating_sub(counted);
            if *q == 0 {
                slot.done = true;
                self.shared.finished.fetch_add(1, Ordering::Release);
            }
        }
    }

    /// The connection is lost: count the event's failure, connect again, or end the slot
    /// when that fails too.
    fn fail(&mut self, key: usize, slot: &mut Slot, e: DbError) {
        // Out of epoll first: a closed socket would be reported on every wait, done or not.
        self.detach(key, slot);
        slot.failure = None;
        let why = format!("connection lost: {}", e.message);
        self.complete(slot, Err(e));
        if !slot.done {
            self.reconnect(key, slot, &why);
        }
    }

    /// Replace a slot's closed connection (`why`), already out of epoll: connect again
    /// (blocking, a few tries, one once a connection of this thread was lost for good; rare)
    /// and register the new one, or end the slot when that fails too.
    fn reconnect(&mut self, key: usize, slot: &mut Slot, why: &str) {
        match super::worker::reconnect(self.connector, self.shared, self.report.lost > 0) {
            Ok(c) => {
                slot.client = c.resume(&mut slot.client);
                self.attach(key, slot);
            }
            Err(gave_up) => {
                let why = gave_up.record(&mut self.report, why);
                self.end(slot, why);
            }
        }
    }
}
