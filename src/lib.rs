//! sezzlee: an MCP gateway that serves folders of API catalogs to agents as
//! three tools (`search_tools`, `load_tool`, `invoke_tool`).
//!
//! The library holds every part; `main.rs` is only the command line.

pub mod catalog;
pub mod check;
