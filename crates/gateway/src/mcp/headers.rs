//! The request metadata headers of Streamable HTTP 2026-07-28.
//!
//! `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` mirror the body so
//! intermediaries can route without parsing it; a server that processes
//! the body must refuse a request whose headers disagree with it, or it
//! would act on something other than what was routed.

use axum::http::HeaderMap;
use base64::Engine;

pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
pub const METHOD: &str = "mcp-method";
pub const NAME: &str = "mcp-name";

/// A header's value: `Ok(None)` when absent, `Err` when it holds bytes a
/// header value may not (anything outside visible ASCII, space and tab) or
/// appears more than once.
pub fn value<'h>(headers: &'h HeaderMap, name: &str) -> Result<Option<&'h str>, String> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(format!("{name} is sent more than once"));
    }
    let text = first
        .to_str()
        .map_err(|_| format!("{name} holds characters a header value may not"))?;
    if text
        .bytes()
        .any(|b| !(b == b'\t' || (0x20..=0x7e).contains(&b)))
    {
        return Err(format!("{name} holds characters a header value may not"));
    }
    Ok(Some(text))
}

/// Why a Base64 sentinel value cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SentinelError {
    NotBase64,
    NotUtf8,
}

impl std::fmt::Display for SentinelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SentinelError::NotBase64 => "its Base64 sentinel value does not decode",
            SentinelError::NotUtf8 => "its Base64 sentinel value is not UTF-8",
        })
    }
}

/// Decodes the Base64 sentinel form `=?base64?…?=`; plain values pass as is.
pub fn decode_sentinel(value: &str) -> Result<String, SentinelError> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .map_err(|_| SentinelError::NotBase64)?;
            String::from_utf8(bytes).map_err(|_| SentinelError::NotUtf8)
        }
        None => Ok(value.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinel_values_decode() {
        assert_eq!(decode_sentinel("get_weather").unwrap(), "get_weather");
        assert_eq!(
            decode_sentinel("=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(),
            "Hello, 世界"
        );
        assert_eq!(
            decode_sentinel("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=").unwrap(),
            "=?base64?literal?="
        );
        assert_eq!(
            decode_sentinel("=?base64?***?="),
            Err(SentinelError::NotBase64)
        );
        assert_eq!(
            decode_sentinel("=?base64?/w==?="),
            Err(SentinelError::NotUtf8)
        );
    }

    #[test]
    fn values_are_checked() {
        let mut headers = HeaderMap::new();
        headers.insert(METHOD, "tools/call".parse().unwrap());
        assert_eq!(value(&headers, METHOD).unwrap(), Some("tools/call"));
        assert_eq!(value(&headers, NAME).unwrap(), None);
        headers.append(METHOD, "tools/list".parse().unwrap());
        assert!(value(&headers, METHOD).is_err());
        let mut headers = HeaderMap::new();
        headers.insert(
            NAME,
            axum::http::HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap(),
        );
        assert!(value(&headers, NAME).is_err());
    }
}
