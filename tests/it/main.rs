//! The integration tests, one binary: each module starts the real server
//! (or the real `sezzlee` binary) and talks to it as a client would.
//! `support` holds the shared set-ups (a gateway on a loopback port, the
//! recording backend, request helpers, the MCP schemas); shared with the
//! benches (`#[path]`): `corpus` the real documents, `mcp_request` a correct
//! 2026-07-28 request, `nginx` where nginx is.

mod access_log;
mod allocator;
mod auth_messages;
mod backend;
mod backend_credentials;
mod boundaries;
mod catalog_rules;
mod changes;
mod check_cli;
mod client_cli;
mod client_gateway;
mod compaction;
mod console;
mod corpus;
mod demo_catalog;
mod deploy_manifests;
mod edit_storm;
mod egress_proxy;
mod faulty_backends;
mod file_replace;
mod flood;
mod flood_guard;
mod form_bodies;
mod health_cli;
mod hostile_callers;
mod identity_provider;
mod incremental;
mod instances;
mod invoke_tool;
mod limits;
mod limits_redis;
mod live_reload;
mod mcp_endpoint;
mod mcp_request;
mod nginx;
mod operator_routes;
mod real_catalogs;
mod rmcp_client;
mod rolling_update;
mod semantic;
mod shaped_answers;
mod support;
mod traces;
mod upstream_credentials;
mod upstream_hostile;
mod upstream_lifecycle;
mod upstream_rmcp;
mod upstream_visibility;
mod visibility;
mod visibility_schemes;
