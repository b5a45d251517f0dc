//! A slow link in user space (this kernel has no netem): the suite's own binary run as ssh's
//! `ProxyCommand` (`agents --relay HOST PORT DELAY_MS JITTER_MS STALL_FILE`) connects to the
//! sshd and copies both ways, each chunk held DELAY ± JITTER ms after it came in (in order:
//! a queue per direction, so the link is slow, not narrow), and nothing at all while
//! STALL_FILE exists (a stalled link: bytes wait, none are lost).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// `ssh -o ProxyCommand=…` through this relay, for $DBTAX_SSH_COMMAND.
pub fn proxy_option(delay_ms: u64, jitter_ms: u64, stall: &Path) -> String {
    format!(
        "-o 'ProxyCommand={} --relay %h %p {delay_ms} {jitter_ms} {}'",
        std::env::current_exe().unwrap().display(),
        stall.display()
    )
}

/// The relay's entry, when the binary was started as one (never returns then).
pub fn run_if_asked() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) != Some("--relay") {
        return;
    }
    let [host, port, delay, jitter, stall] = &args[2..7] else {
        eprintln!("relay: HOST PORT DELAY_MS JITTER_MS STALL_FILE");
        std::process::exit(2);
    };
    let (delay, jitter): (u64, u64) = (delay.parse().unwrap(), jitter.parse().unwrap());
    let stall = PathBuf::from(stall);
    let socket = TcpStream::connect(format!("{host}:{port}")).unwrap_or_else(|e| {
        eprintln!("relay: cannot reach {host}:{port}: {e}");
        std::process::exit(1)
    });
    socket.set_nodelay(true).unwrap();
    let (up_r, up_w) = (socket.try_clone().unwrap(), socket);
    let stall2 = stall.clone();
    let up = std::thread::spawn(move || {
        pipe(std::io::stdin(), up_w, delay, jitter, &stall2, 1);
    });
    pipe(up_r, std::io::stdout(), delay, jitter, &stall, 2);
    let _ = up.join();
    std::process::exit(0);
}

/// Copy `from` to `to`, each chunk written no sooner than DELAY ± JITTER after it was read,
/// and not while `stall` exists. Ends when either side closes.
fn pipe<R: Read + Send + 'static, W: Write>(
    mut from: R,
    mut to: W,
    delay: u64,
    jitter: u64,
    stall: &Path,
    seed: u64,
) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    // xorshift: the jitter of this chunk.
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let ms = delay + x % (2 * jitter + 1) - jitter;
                    let due = Instant::now() + Duration::from_millis(ms);
                    if tx.send((due, buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
            }
        }
    });
    // In order: a chunk due before the one ahead of it waits for it.
    for (due, bytes) in rx {
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        while stall.exists() {
            std::thread::sleep(Duration::from_millis(20));
        }
        if to.write_all(&bytes).and_then(|_| to.flush()).is_err() {
            return;
        }
    }
}
