//! `sezzlee client URL …`: the client library as a command.
//!
//! Human-readable output by default, `--json` for scripts. Exit codes keep
//! the protocol's two error tracks apart: 0 success, 1 the tool ran and
//! failed (`isError`), 2 a protocol error (JSON-RPC error, HTTP or
//! transport failure, bad input). Server text is untrusted: control and
//! bidirectional-override characters are removed before it is printed.
//!
//! This file is the command's public face (its arguments and `run`); the
//! arguments themselves live in `arguments`, talking to the server in
//! `execution` and every printed line in `rendering`.

mod arguments;
mod execution;
mod rendering;

pub use arguments::ClientArgs;

use execution::execute;
use rendering::report;
use std::process::ExitCode;

/// Runs `sezzlee client`.
pub fn run(args: ClientArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("sezzlee client: cannot start the runtime: {err}");
            return ExitCode::from(2);
        }
    };
    let output = rendering::Output::of_flag(args.json);
    match runtime.block_on(execute(args)) {
        Ok(code) => code,
        Err(err) => {
            report(&err, output);
            ExitCode::from(2)
        }
    }
}
