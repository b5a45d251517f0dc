//! Printing that never panics: `std`'s `println!` and `eprintln!` panic when their stream is
//! closed (`dbtax run … 2>&1 | head -2`), which would end a run in the middle of restoring a
//! server. These macros write and ignore a closed stream, as ripgrep treats a broken pipe:
//! nobody is reading, and the run's own work (restore, results.json) goes on.

/// `print!` to stdout, ignoring a closed stream.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `println!` to stdout, ignoring a closed stream.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `eprintln!` to stderr, ignoring a closed stream.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}
