//! Printing a command's output so that a reader that stops early (`sezzlee
//! client … | head`) ends the command quietly, as it ends `cat`: `println!`
//! panics when stdout is a closed pipe. Used through the `outln!` and
//! `out!` macros.

use std::io::Write;

/// The exit status of a process a closed pipe ended (128 + SIGPIPE), as
/// the shell reports `cat`'s.
const CLOSED_PIPE_EXIT: i32 = 141;

/// Writes `text` (and a line break when `line`) to stdout. A closed pipe
/// ends the process with [`CLOSED_PIPE_EXIT`]; any other failure to write
/// is said on stderr once, and the process ends with status 2.
pub fn write(text: std::fmt::Arguments<'_>, line: bool) {
    let mut out = std::io::stdout().lock();
    let written = out
        .write_fmt(text)
        .and_then(|()| if line { out.write_all(b"\n") } else { Ok(()) });
    if let Err(err) = written {
        if err.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(CLOSED_PIPE_EXIT);
        }
        eprintln!("cannot write to stdout: {err}");
        std::process::exit(2);
    }
}

/// `println!` for command output (see the module).
macro_rules! outln {
    () => {
        $crate::commands::stdout::write(format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::commands::stdout::write(format_args!($($arg)*), true)
    };
}

/// `print!` for command output (see the module).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::commands::stdout::write(format_args!($($arg)*), false)
    };
}

pub(crate) use {out, outln};
