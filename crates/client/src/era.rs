//! Which protocol era a server speaks, found the way the 2026-07-28
//! versioning page says: try a modern request first (`server/discover`,
//! which has no side effects) and fall back to the legacy `initialize`
//! handshake when the server answers a `4xx` (or a JSON-RPC error) that is
//! not a recognised modern error. The answer is a property of the server,
//! so it is remembered per URL ([`EraMemory`]); a legacy session's id, if
//! the server mints one, is carried on every request and ended with DELETE.

use super::ClientError;
use super::rpc::{self, ErrorCode, HANDSHAKE_VERSIONS, STATELESS_VERSION, UNSUPPORTED_VERSION};
use super::transport::{Answer, SESSION_HEADER, Transport, preview};
use serde_json::{Map, Value};
use sezzlee_json::strings;
use sezzlee_protocol::{Method, notification};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// How the client picks the era.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EraChoice {
    /// Modern first, legacy when the server is not modern (the default).
    #[default]
    Auto,
    /// 2026-07-28 only.
    Modern,
    /// The `initialize` handshake only.
    Legacy,
}

/// A protocol era.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28: stateless, `_meta` on every request.
    Modern,
    /// 2025-03-26 … 2025-11-25: `initialize`, maybe a session.
    Legacy,
}

impl std::fmt::Display for Era {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Era::Modern => "modern",
            Era::Legacy => "legacy",
        })
    }
}

/// What the client and one server settled on.
#[derive(Debug, Clone)]
pub struct Negotiated {
    pub era: Era,
    pub protocol_version: String,
    /// `Mcp-Session-Id` a legacy server minted.
    pub session_id: Option<String>,
    /// The `DiscoverResult` (modern, when probed) or `InitializeResult`
    /// (legacy); `null` when the era came from memory without a probe.
    pub server: Value,
    /// The era came from [`EraMemory`], not from a probe just now.
    pub remembered: bool,
}

impl Negotiated {
    /// The headers every request of this era carries besides the body's
    /// own (modern requests add theirs per method).
    pub fn legacy_headers(&self) -> Vec<(String, String)> {
        let mut headers = Vec::new();
        // 2025-03-26 predates the header.
        if self.protocol_version != "2025-03-26" {
            headers.push((
                "MCP-Protocol-Version".to_string(),
                self.protocol_version.clone(),
            ));
        }
        if let Some(session) = &self.session_id {
            headers.push((SESSION_HEADER.to_string(), session.clone()));
        }
        headers
    }
}

/// The era each server URL was found to speak. Shared by every client of
/// the process by default ([`EraMemory::process`]), so a second client of
/// the same server skips the probe.
#[derive(Default)]
pub struct EraMemory {
    known: Mutex<HashMap<String, Remembered>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Remembered {
    Modern,
    Legacy(String),
}

impl EraMemory {
    /// The memory shared by this process's clients.
    pub fn process() -> Arc<EraMemory> {
        static MEMORY: OnceLock<Arc<EraMemory>> = OnceLock::new();
        MEMORY.get_or_init(Default::default).clone()
    }

    /// The era remembered for `url`, if any.
    pub fn era(&self, url: &str) -> Option<Era> {
        self.get(url).map(|known| match known {
            Remembered::Modern => Era::Modern,
            Remembered::Legacy(_) => Era::Legacy,
        })
    }

    fn get(&self, url: &str) -> Option<Remembered> {
        self.lock().get(url).cloned()
    }

    fn set(&self, url: &str, known: Remembered) {
        self.lock().insert(url.to_string(), known);
    }

    /// Forgets `url` (its next request probes again).
    pub fn forget(&self, url: &str) {
        self.lock().remove(url);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Remembered>> {
        self.known
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Finds the era per `choice` (consulting and updating `memory`).
pub async fn negotiate(
    transport: &Transport,
    choice: EraChoice,
    memory: &EraMemory,
    id: impl Fn() -> Value,
) -> Result<Negotiated, ClientError> {
    let url = transport.url();
    match choice {
        EraChoice::Legacy => initialize(transport, HANDSHAKE_VERSIONS[0], &id).await,
        EraChoice::Modern => match probe(transport, &id).await? {
            Probe::Modern(server) => Ok(modern(server, false)),
            Probe::Legacy { why, .. } => Err(ClientError::Unsupported(format!(
                "the server does not speak {STATELESS_VERSION}: {why}"
            ))),
        },
        EraChoice::Auto => {
            match memory.get(url) {
                Some(Remembered::Modern) => return Ok(modern(Value::Null, true)),
                Some(Remembered::Legacy(version)) => {
                    match initialize(transport, &version, &id).await {
                        Ok(mut negotiated) => {
                            negotiated.remembered = true;
                            return Ok(negotiated);
                        }
                        // The server changed (or forgot that version): probe again.
                        Err(
                            ClientError::Rpc(_)
                            | ClientError::Http { .. }
                            | ClientError::Unsupported(_),
                        ) => {
                            memory.forget(url);
                        }
                        Err(err) => return Err(err),
                    }
                }
                None => {}
            }
            match probe(transport, &id).await? {
                Probe::Modern(server) => {
                    memory.set(url, Remembered::Modern);
                    Ok(modern(server, false))
                }
                Probe::Legacy { why, version } => {
                    tracing::debug!(url, why, "falling back to the initialize handshake");
                    let negotiated = initialize(transport, version, &id).await?;
                    memory.set(url, Remembered::Legacy(negotiated.protocol_version.clone()));
                    Ok(negotiated)
                }
            }
        }
    }
}

fn modern(server: Value, remembered: bool) -> Negotiated {
    Negotiated {
        era: Era::Modern,
        protocol_version: STATELESS_VERSION.to_string(),
        session_id: None,
        server,
        remembered,
    }
}

enum Probe {
    /// The `DiscoverResult`.
    Modern(Value),
    /// Not modern: why, and the legacy version to offer.
    Legacy { why: String, version: &'static str },
}

/// One modern `server/discover`, judged per the backward-compatibility
/// rules of Streamable HTTP.
async fn probe(transport: &Transport, id: &impl Fn() -> Value) -> Result<Probe, ClientError> {
    let id = id();
    let body = rpc::modern_body(&id, Method::ServerDiscover.as_str(), Map::new());
    let headers = rpc::modern_headers(Method::ServerDiscover.as_str(), &Map::new());
    let newest = HANDSHAKE_VERSIONS[0];
    match transport.send(&body, &headers, Some(&id)).await? {
        Answer::Message {
            status, message, ..
        } => {
            if let Some(result) = message.get("result") {
                let supported = strings(result.get("supportedVersions"));
                if supported.is_empty() || supported.iter().any(|v| v == STATELESS_VERSION) {
                    return Ok(Probe::Modern(result.clone()));
                }
                return match newest_legacy(&supported) {
                    Some(version) => Ok(Probe::Legacy {
                        why: format!("server/discover lists only {}", supported.join(", ")),
                        version,
                    }),
                    None => Err(no_common_version(&supported)),
                };
            }
            let error = super::RpcError::from_message(&message, Some(status));
            if error.code == UNSUPPORTED_VERSION {
                // A modern server that does not serve our modern version:
                // reach a legacy one it lists through initialize.
                let supported = strings(error.data.as_ref().and_then(|d| d.get("supported")));
                return match newest_legacy(&supported) {
                    Some(version) => Ok(Probe::Legacy {
                        why: format!("the server supports {}", supported.join(", ")),
                        version,
                    }),
                    None => Err(ClientError::Rpc(error)),
                };
            }
            if ErrorCode::STATELESS_ERRORS.contains(&ErrorCode(error.code)) || status >= 500 {
                return Err(ClientError::Rpc(error));
            }
            Ok(Probe::Legacy {
                why: format!(
                    "server/discover was answered {status} with error {} ({})",
                    error.code, error.message
                ),
                version: newest,
            })
        }
        Answer::Status { status, body } if (400..500).contains(&status) => Ok(Probe::Legacy {
            why: format!("server/discover was answered {status}: {}", preview(&body)),
            version: newest,
        }),
        Answer::Status { status, body } => Err(ClientError::Http {
            status,
            body: preview(&body),
        }),
        Answer::Accepted => Err(ClientError::Malformed(
            "server/discover was answered 202 Accepted, not a response".to_string(),
        )),
    }
}

fn newest_legacy(supported: &[String]) -> Option<&'static str> {
    HANDSHAKE_VERSIONS
        .into_iter()
        .find(|version| supported.iter().any(|s| s == version))
}

fn no_common_version(supported: &[String]) -> ClientError {
    ClientError::Unsupported(format!(
        "no protocol version in common: the server speaks {}, this client {STATELESS_VERSION} and {}",
        supported.join(", "),
        HANDSHAKE_VERSIONS.join(", ")
    ))
}

/// The legacy handshake: `initialize` offering `version`, then
/// `notifications/initialized`.
pub async fn initialize(
    transport: &Transport,
    version: &str,
    id: &impl Fn() -> Value,
) -> Result<Negotiated, ClientError> {
    let request_id = id();
    let body = rpc::legacy_body(
        &request_id,
        Method::Initialize.as_str(),
        rpc::initialize_params(version),
    );
    let (result, session) = match transport.send(&body, &[], Some(&request_id)).await? {
        Answer::Message {
            status,
            message,
            session,
        } => match message.get("result") {
            Some(result) => (result.clone(), session),
            None => {
                return Err(ClientError::Rpc(super::RpcError::from_message(
                    &message,
                    Some(status),
                )));
            }
        },
        Answer::Status { status, body } => {
            return Err(ClientError::Http {
                status,
                body: preview(&body),
            });
        }
        Answer::Accepted => {
            return Err(ClientError::Malformed(
                "initialize was answered 202 Accepted, not a response".to_string(),
            ));
        }
    };
    let chosen = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ClientError::Malformed("the initialize result has no protocolVersion".to_string())
        })?;
    if !HANDSHAKE_VERSIONS.contains(&chosen) {
        return Err(ClientError::Unsupported(format!(
            "the server answered initialize with protocol version {chosen}; this client speaks {}",
            HANDSHAKE_VERSIONS.join(", ")
        )));
    }
    let negotiated = Negotiated {
        era: Era::Legacy,
        protocol_version: chosen.to_string(),
        session_id: session,
        server: result.clone(),
        remembered: false,
    };
    let initialized = rpc::notification(notification::INITIALIZED);
    match transport
        .send(&initialized, &negotiated.legacy_headers(), None)
        .await?
    {
        Answer::Status { status, body } if status >= 400 => {
            return Err(ClientError::Http {
                status,
                body: preview(&body),
            });
        }
        _ => {}
    }
    Ok(negotiated)
}

/// Ends a legacy session with DELETE (nothing to do without one).
pub async fn end_session(
    transport: &Transport,
    negotiated: &Negotiated,
) -> Result<(), ClientError> {
    if negotiated.era != Era::Legacy || negotiated.session_id.is_none() {
        return Ok(());
    }
    let status = transport
        .delete_session(&negotiated.legacy_headers())
        .await?;
    match status {
        200..=299 | 404 | 405 => Ok(()),
        status => Err(ClientError::Http {
            status,
            body: format!("DELETE of the session was answered {status}"),
        }),
    }
}
