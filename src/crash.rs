//! A panic is a bug in dbtax, and the server must still be left as it was found. The hook
//! keeps the panic's message instead of printing a backtrace; unwinding runs every guard
//! (the switcher restores the settings it changed and says here whether that worked); `main`
//! then prints one paragraph: that it is a bug, where, whether each server was put back, and
//! what to run if not. A test build can trigger a panic mid-run (`DBTAX_TEST_PANIC_AT_TRIAL`)
//! so that the fault suite checks all of this against a real server.

use std::sync::Mutex;

/// The first panic's message and place.
static PANIC: Mutex<Option<String>> = Mutex::new(None);
/// What each guard that unwound did: (target, None: restored; Some(why): not restored).
static RESTORES: Mutex<Vec<(String, Option<String>)>> = Mutex::new(vec![]);

/// Keep the first panic's message and place instead of printing it.
pub fn install_hook() {
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let mut p = PANIC.lock().unwrap_or_else(|e| e.into_inner());
        if p.is_none() {
            *p = Some(format!("{what}{at}"));
        }
    }));
}

/// A guard that unwound (or was dropped on an error path) restored `target`'s settings, or
/// failed to (`why`).
pub fn record_restore(target: &str, why: Option<String>) {
    RESTORES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((target.to_string(), why));
}

/// The paragraph `main` prints after a panic.
pub fn paragraph() -> String {
    let what = PANIC
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_else(|| "no message".into());
    let restores = RESTORES.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut s = format!(
        "dbtax stopped on a bug (a panic: {what}); please report it with the command you ran."
    );
    if restores.is_empty() {
        s.push_str(" No server setting was left changed by this run (none had been changed yet, or it was already put back).");
    }
    for (target, why) in restores {
        match why {
            None => s.push_str(&format!(
                " The settings it had changed on {target} were put back and its journal closed."
            )),
            Some(why) => s.push_str(&format!(
                " Putting back the settings it had changed on {target} failed ({why}): run \
                 `dbtax restore --target '{target}'`."
            )),
        }
    }
    s
}

/// The fault suite's panic point: panics when trial `index` (0-based, warm-up included) is
/// about to start and `DBTAX_TEST_PANIC_AT_TRIAL` names it.
pub fn test_point(index: usize) {
    if std::env::var("DBTAX_TEST_PANIC_AT_TRIAL").is_ok_and(|v| v == index.to_string()) {
        panic!(
            "the fault suite's injected panic before trial {}",
            index + 1
        );
    }
}
