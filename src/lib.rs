//! sezzlee: an MCP gateway that serves folders of API catalogs to agents as
//! three tools (`search_tools`, `load_tool`, `invoke_tool`).
//!
//! The library holds every part; `main.rs` is only the command line. See
//! ARCHITECTURE.md for the map.

pub mod auth;
pub mod backend;
pub mod catalog;
pub mod check;
pub mod client;
pub mod demo;
pub mod gateway;
pub mod header_text;
pub mod json_value;
pub mod mcp;
pub mod reload;
pub mod search_tasks;
pub mod server;
pub mod settings;
pub mod status;
pub mod store;
pub mod token;
pub mod tools;
pub mod visibility;
