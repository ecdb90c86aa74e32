//! Reading a backend response: bounded, classified, reduced to what an
//! agent can use.
//!
//! JSON bodies are parsed, text stays text, binary bodies and bodies over
//! the size cap are left out with their size, and only the headers an
//! agent acts on are kept.

use super::Failure;
use axum::body::Bytes;
use axum::http::Response;
use http_body_util::BodyExt;
use serde_json::{Map, Value, json};

/// Response headers worth showing an agent.
pub const KEPT_HEADERS: [&str; 5] = ["location", "link", "etag", "retry-after", "content-type"];

/// What came back.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendResponse {
    pub status: u16,
    pub headers: Map<String, Value>,
    pub body: ResponseBody,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ResponseBody {
    Empty,
    Json(Value),
    Text(String),
    /// Not shown: `reason` is `binary` or `over_budget` (the same word
    /// invoke_tool uses for a body over the response budget).
    Omitted {
        reason: &'static str,
        bytes: usize,
    },
}

impl ResponseBody {
    /// The `body` field (and an `omitted` field when left out).
    pub fn into_fields(self, out: &mut Map<String, Value>) {
        match self {
            ResponseBody::Empty => {
                out.insert("body".to_string(), Value::Null);
            }
            ResponseBody::Json(value) => {
                out.insert("body".to_string(), value);
            }
            ResponseBody::Text(text) => {
                out.insert("body".to_string(), Value::String(text));
            }
            ResponseBody::Omitted { reason, bytes } => {
                out.insert("body".to_string(), Value::Null);
                out.insert(
                    "omitted".to_string(),
                    json!({"reason": reason, "bytes": bytes}),
                );
            }
        }
    }
}

/// Reads at most `max` bytes of the body (of hyper's client, or of
/// reqwest's as an `http::Response`).
pub async fn read<B>(response: Response<B>, max: usize) -> Result<BackendResponse, Failure>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let status = response.status().as_u16();
    let mut headers = Map::new();
    for name in KEPT_HEADERS {
        if let Some(value) = response.headers().get(name).and_then(|v| v.to_str().ok()) {
            headers.insert(name.to_string(), json!(value));
        }
    }
    let content_type = headers
        .get("content-type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    let mut body = response.into_body();
    let declared = body.size_hint().exact().map(|n| n as usize);
    if declared.is_some_and(|n| n > max) {
        return Ok(BackendResponse {
            status,
            headers,
            body: ResponseBody::Omitted {
                reason: "over_budget",
                bytes: declared.unwrap_or(max),
            },
        });
    }
    let mut bytes: Vec<u8> = Vec::with_capacity(declared.unwrap_or(0));
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|err| Failure::Unavailable {
            detail: format!("the response broke off: {err}"),
            maybe_reached: true,
        })?;
        let Ok(chunk) = frame.into_data() else {
            continue; // trailers
        };
        if bytes.len() + chunk.len() > max {
            return Ok(BackendResponse {
                status,
                headers,
                body: ResponseBody::Omitted {
                    reason: "over_budget",
                    bytes: bytes.len() + chunk.len(),
                },
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(BackendResponse {
        status,
        headers,
        body: classify_body(&content_type, bytes),
    })
}

fn classify_body(content_type: &str, bytes: Vec<u8>) -> ResponseBody {
    if bytes.is_empty() {
        return ResponseBody::Empty;
    }
    let base = content_type.split(';').next().unwrap_or("").trim();
    let is_json = base.ends_with("/json") || base.ends_with("+json");
    if is_json && let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
        return ResponseBody::Json(value);
    }
    let textual = is_json
        || base.is_empty()
        || base.starts_with("text/")
        || base.ends_with("/xml")
        || base.ends_with("+xml")
        || base == "application/x-www-form-urlencoded"
        || base == "application/javascript"
        || base == "application/yaml";
    match String::from_utf8(bytes) {
        Ok(text) if textual => ResponseBody::Text(text),
        Ok(text) if !text.contains('\0') && base.is_empty() => ResponseBody::Text(text),
        Ok(text) => ResponseBody::Omitted {
            reason: "binary",
            bytes: text.len(),
        },
        Err(err) => ResponseBody::Omitted {
            reason: "binary",
            bytes: err.into_bytes().len(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_classified_by_content_type() {
        assert_eq!(
            classify_body("application/json", br#"{"a":1}"#.to_vec()),
            ResponseBody::Json(json!({"a": 1}))
        );
        assert_eq!(
            classify_body("application/problem+json; charset=utf-8", b"[1]".to_vec()),
            ResponseBody::Json(json!([1]))
        );
        assert_eq!(
            classify_body("application/json", b"not json".to_vec()),
            ResponseBody::Text("not json".to_string())
        );
        assert_eq!(
            classify_body("text/plain", b"hi".to_vec()),
            ResponseBody::Text("hi".to_string())
        );
        assert_eq!(
            classify_body("image/png", vec![0x89, 0x50]),
            ResponseBody::Omitted {
                reason: "binary",
                bytes: 2
            }
        );
        assert_eq!(
            classify_body("application/octet-stream", b"abc".to_vec()),
            ResponseBody::Omitted {
                reason: "binary",
                bytes: 3
            }
        );
        assert_eq!(classify_body("", Vec::new()), ResponseBody::Empty);
    }
}
