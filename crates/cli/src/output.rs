//! The operator's output on stdout. `println!` panics when stdout is a closed pipe
//! (`headroom status | head -3`); a line that cannot be written because the reader has gone
//! ends the process quietly instead, as the other tools of a pipeline do. Everything headroom
//! prints comes after the work it reports is committed, so stopping there loses nothing.

use std::io::{ErrorKind, Write};

/// The exit status of a process ended by a closed pipe (128 + SIGPIPE), as shells report it.
const BROKEN_PIPE_EXIT: i32 = 141;

/// Writes one line to stdout.
pub fn line(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let written = out
        .write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    if let Err(e) = written
        && e.kind() == ErrorKind::BrokenPipe
    {
        std::process::exit(BROKEN_PIPE_EXIT);
    }
}

/// `println!` for the operator's output: see [`line`].
macro_rules! outln {
    () => {
        $crate::output::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))
    };
}
