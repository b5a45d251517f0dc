//! `dbtax capture` interrupted: Ctrl-C puts the setting back and writes what was logged until
//! then; kill -9 leaves the journal, and `dbtax restore` puts back what it names. The suite's
//! server starts with log_output=TABLE and long_query_time=2.5: both must come back.

use super::*;

/// Start a capture of `secs` into `out`; returns it once the log is on, with its words so
/// far and the rest of them (read behind: a full pipe would stop it).
fn start_capture(
    ctx: &Ctx,
    out: &Path,
    secs: &str,
) -> (Child, String, std::thread::JoinHandle<String>) {
    let common::Capture {
        child,
        said,
        mut err,
    } = common::Capture::start(ctx.dbtax(), secs, &ctx.socket_url("f_capture"), out);
    let rest = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    assert_eq!(ctx.var("slow_query_log"), "1", "{said}");
    assert_eq!(ctx.var("log_output"), "FILE", "{said}");
    (child, said, rest)
}

/// A statement of a new connection (the slow log's long_query_time=0 applies to those).
fn marked(ctx: &Ctx, mark: &str) {
    let mut c = common::root(&ctx.socket);
    for _ in 0..3 {
        c.query_drop(format!("SELECT '{mark}'")).unwrap();
    }
}

pub fn ctrl_c_ends_a_capture_with_the_setting_back_and_its_file_written(ctx: &Ctx) {
    let originals = ctx.originals();
    let out = ctx.work.join("capture-ctrl-c.log");
    let (child, said, rest) = start_capture(ctx, &out, "120s");
    marked(ctx, "captured-before-ctrl-c");
    let started = Instant::now();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = wait_child(child, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(130), "{said}{}", text(&o));
    let words = rest.join().unwrap();
    assert!(words.contains("the setting was put back"), "{words}");
    ctx.as_found(&originals).unwrap();
    let captured = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        captured.matches("SELECT 'captured-before-ctrl-c'").count(),
        3,
        "{captured}"
    );
    println!(
        "Ctrl-C on a capture: ended in {:.1} s, settings as found, {} bytes written",
        started.elapsed().as_secs_f64(),
        captured.len()
    );
}

pub fn kill_9_of_a_capture_then_restore_puts_the_setting_back(ctx: &Ctx) {
    let originals = ctx.originals();
    let out = ctx.work.join("capture-kill.log");
    let (child, said, _) = start_capture(ctx, &out, "120s");
    marked(ctx, "captured-before-kill");
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = wait_child(child, Duration::from_secs(20));
    // Left on, journaled.
    assert_eq!(ctx.var("slow_query_log"), "1", "{said}");
    assert!(ctx.as_found(&originals).is_err());
    let o = ctx.restore();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    ctx.as_found(&originals).unwrap();
    println!("kill -9 of a capture: `dbtax restore` put every setting back");
}
