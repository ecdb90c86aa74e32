//! Form (`application/x-www-form-urlencoded`) and multipart
//! (`multipart/form-data`) bodies, each member written as the document's
//! `encoding` says (recorded per argument by the catalog): a nested Stripe
//! `metadata` goes out as `metadata[reason]=dup`, not as JSON text.
//!
//! The rules are `docs/contract.md` §2.3, "Form and multipart bodies":
//! a styled form member is written exactly like a query parameter of the
//! same style (so the two can never disagree); a member written by media
//! type is JSON text when its `contentType` is JSON or its value is an
//! object, and plain text otherwise; a multipart member is one part, or one
//! part per item of an array. `null` members are left out of both.

use super::request::{Part, Problem, encode, problem, query_pairs, scalar_text};
use base64::Engine;
use serde_json::Value;
use sezzlee_catalog::{Argument, MemberEncoding, Style, is_json_media_type};

/// The `name=value&…` text of a form body, members in the order the
/// document declares them.
pub fn url_encoded(members: &[(&Argument, &Value)]) -> String {
    let mut pairs = Vec::new();
    for (argument, value) in members {
        if value.is_null() {
            continue;
        }
        match argument.encoding.as_deref() {
            Some(encoding) if encoding.by_media_type => {
                by_media_type(&argument.wire_name, value, encoding, &mut pairs)
            }
            _ => pairs.extend(query_pairs(argument, value)),
        }
    }
    pairs.join("&")
}

/// A form member written by its media type: JSON text for a JSON
/// `contentType` or an object, else text; an array is one pair per item.
fn by_media_type(name: &str, value: &Value, encoding: &MemberEncoding, out: &mut Vec<String>) {
    let name = encode(name, false);
    if encoding
        .content_type
        .as_deref()
        .is_some_and(is_json_media_type)
    {
        out.push(format!("{name}={}", encode(&value.to_string(), false)));
        return;
    }
    let items: &[Value] = match value {
        Value::Array(items) => items,
        single => std::slice::from_ref(single),
    };
    for item in items.iter().filter(|item| !item.is_null()) {
        out.push(format!(
            "{name}={}",
            encode(&scalar_text(item, false), false)
        ));
    }
}

/// The parts of a multipart body. `binary_members` names the members whose
/// schema says `contentEncoding: base64`: they are decoded and uploaded as
/// files.
pub fn multipart(
    members: &[(&Argument, &Value)],
    binary_members: &[String],
) -> Result<Vec<Part>, Vec<Problem>> {
    let mut parts = Vec::new();
    for (argument, value) in members {
        if value.is_null() {
            continue;
        }
        let file = binary_members.contains(&argument.member);
        let encoding = argument.encoding.as_deref();
        match value {
            // OpenAPI 3.x (written by media type) and an exploded Swagger
            // 2.0 `collectionFormat: multi`: one part per item.
            Value::Array(items) if encoding.is_some() || argument.explode => {
                for item in items.iter().filter(|item| !item.is_null()) {
                    parts.push(part(argument, item, file, encoding)?);
                }
            }
            // Swagger 2.0 `csv`, `ssv`, `pipes`, `tsv`: one part, joined.
            Value::Array(items) if encoding.is_none() => {
                let separator = match argument.style {
                    Style::SpaceDelimited => " ",
                    Style::PipeDelimited => "|",
                    Style::TabDelimited => "\t",
                    _ => ",",
                };
                let joined = items
                    .iter()
                    .map(|item| scalar_text(item, false))
                    .collect::<Vec<_>>()
                    .join(separator);
                parts.push(part(argument, &Value::String(joined), file, encoding)?);
            }
            single => parts.push(part(argument, single, file, encoding)?),
        }
    }
    Ok(parts)
}

/// One part: a file's decoded bytes, or the value's text, with the media
/// type the document names or the one its kind implies.
fn part(
    argument: &Argument,
    value: &Value,
    file: bool,
    encoding: Option<&MemberEncoding>,
) -> Result<Part, Vec<Problem>> {
    let named = encoding.and_then(|e| e.content_type.clone());
    let (bytes, content_type) = if file {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(value.as_str().unwrap_or_default())
            .map_err(|_| {
                problem(
                    &argument.member,
                    format!(
                        "'{}' must be base64 (it is uploaded as a file)",
                        argument.member
                    ),
                )
            })?;
        let content_type = named.unwrap_or_else(|| "application/octet-stream".to_string());
        (bytes, Some(content_type))
    } else if named.as_deref().is_some_and(is_json_media_type) {
        (value.to_string().into_bytes(), named)
    } else {
        let implied = match value {
            Value::Object(_) | Value::Array(_) => Some("application/json".to_string()),
            // A text part: RFC 7578's default, `text/plain`.
            _ => None,
        };
        (scalar_text(value, false).into_bytes(), named.or(implied))
    };
    Ok(Part {
        name: argument.wire_name.clone(),
        bytes,
        file,
        content_type,
        headers: encoding.map(|e| e.headers.clone()).unwrap_or_default(),
    })
}
