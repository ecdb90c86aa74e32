//! The `sezzlee` command line: argument parsing only; the work lives in the
//! library.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "sezzlee",
    version,
    about = "An MCP gateway that serves API catalogs as three tools"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build the catalog once, print diagnostics and a summary; exit 1 on errors.
    Check {
        /// The catalogs folder.
        #[arg(default_value = "./catalogs")]
        dir: PathBuf,
        /// Print every tool as one JSON line on stdout (diagnostics go to stderr).
        #[arg(long)]
        emit: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check { dir, emit } => sezzlee::check::run(&dir, emit),
    }
}
