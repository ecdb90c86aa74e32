//! The sezzlee gateway: the MCP endpoint over a folder of API catalogs, the
//! three tools behind it, calls to the real backends, per-caller
//! visibility, live reload and status.
//!
//! The catalog itself (documents → tools, search index) is the pure
//! `sezzlee-catalog` crate; this crate is everything that runs. See
//! ARCHITECTURE.md for the map.

pub mod auth;
pub mod backend;
pub mod changes;
pub mod config_error;
mod console;
pub mod demo;
pub mod embedding;
pub mod environment;
pub mod failure_code;
pub mod flood_guard;
pub mod gateway;
pub mod jsonrpc;
pub mod limits;
pub mod mcp;
pub mod metrics;
pub mod open_files;
mod process;
pub mod reload;
pub mod reload_history;
mod reply;
mod router;
pub mod server;
mod serving_threads;
pub mod settings;
pub mod shutdown;
mod status;
pub mod store;
pub mod streams;
pub mod telemetry;
pub mod tools;
pub mod upstream;
pub mod visibility;
