//! How each member of a form or multipart request body is written, read
//! once from the document's `encoding` (the OpenAPI 3.x Encoding Object) so
//! that a call is serialised the way the API expects (Stripe's
//! `metadata[reason]=dup`, not the object as JSON text).
//!
//! The rules, with the defaults the specifications state when `encoding`
//! is silent, are in `docs/contract.md` §2.3 ("Form and multipart
//! bodies"). In short: a form member is written by `style`/`explode` like
//! a query parameter (OpenAPI 3.0's default, form and exploded), or by its
//! media type when the document names none of `style`, `explode`,
//! `allowReserved` (OpenAPI 3.1's rule, and 3.0's when only a
//! `contentType` is named); a multipart member is one part (or one part per
//! array item) written by its media type, with the part headers whose value
//! the document fixes.

use super::refs::Resolver;
use super::schema::Dialect;
use super::{MemberEncoding, Style};
use serde_json::Value;
use std::sync::Arc;

/// The kind of body whose members are being described.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormKind {
    UrlEncoded,
    Multipart,
    /// Any other media type (JSON): members are written inside the JSON.
    Other,
}

impl FormKind {
    pub fn of(media_type: &str) -> FormKind {
        match super::media_type::base_media_type(media_type).as_str() {
            "application/x-www-form-urlencoded" => FormKind::UrlEncoded,
            "multipart/form-data" => FormKind::Multipart,
            _ => FormKind::Other,
        }
    }
}

/// The serialisation of one body member: style, explode, allowReserved and
/// what else the encoding says.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberRule {
    pub style: Style,
    pub explode: bool,
    pub allow_reserved: bool,
    pub encoding: Option<Arc<MemberEncoding>>,
}

/// The rule for member `name` of a body of `kind`; `entry` is the
/// member's Encoding Object (already looked up in `encoding`), written in
/// `file` (for `$ref`s in its `headers`).
pub fn member_rule(
    dialect: Dialect,
    kind: FormKind,
    entry: Option<&Value>,
    resolver: &Resolver<'_>,
    file: &Arc<str>,
) -> MemberRule {
    let plain = MemberRule {
        style: Style::Form,
        explode: true,
        allow_reserved: false,
        encoding: None,
    };
    if kind == FormKind::Other {
        return plain;
    }
    let entry = entry.and_then(Value::as_object);
    let field = |key: &str| entry.and_then(|e| e.get(key));
    let style = match field("style").and_then(Value::as_str) {
        Some("spaceDelimited") => Style::SpaceDelimited,
        Some("pipeDelimited") => Style::PipeDelimited,
        Some("deepObject") => Style::DeepObject,
        // `form` and anything a form body cannot use.
        _ => Style::Form,
    };
    let explode = field("explode")
        .and_then(Value::as_bool)
        .unwrap_or(style == Style::Form);
    let allow_reserved = field("allowReserved").and_then(Value::as_bool) == Some(true);
    let styled = ["style", "explode", "allowReserved"]
        .iter()
        .any(|key| field(key).is_some());
    let content_type = field("contentType")
        .and_then(Value::as_str)
        .and_then(|listed| listed.split(',').next())
        .map(|first| first.trim().to_string())
        .filter(|first| !first.is_empty());
    let by_media_type = match kind {
        FormKind::Multipart => true,
        FormKind::UrlEncoded => {
            !styled && (dialect == Dialect::OpenApi31 || content_type.is_some())
        }
        FormKind::Other => false,
    };
    let headers = if kind == FormKind::Multipart {
        fixed_part_headers(field("headers"), resolver, file)
    } else {
        Vec::new()
    };
    let encoding = (by_media_type || content_type.is_some() || !headers.is_empty()).then(|| {
        Arc::new(MemberEncoding {
            by_media_type,
            content_type,
            headers,
        })
    });
    MemberRule {
        style,
        explode,
        allow_reserved,
        encoding,
    }
}

/// The part headers whose value the document fixes: a Header Object whose
/// schema has `const`, an `enum` of one value, or a `default`. Others have
/// no value the gateway could send (the agent is never asked for part
/// headers) and are left out; `Content-Type` is the part's media type and
/// is ignored here, as the specification says.
fn fixed_part_headers(
    headers: Option<&Value>,
    resolver: &Resolver<'_>,
    file: &Arc<str>,
) -> Vec<(String, String)> {
    let Some(headers) = headers.and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut fixed = Vec::new();
    for (name, header) in headers {
        if name.eq_ignore_ascii_case("content-type") {
            continue;
        }
        let Ok((schema_file, header)) = resolver.follow(file, header) else {
            continue;
        };
        let Some(schema) = header.get("schema") else {
            continue;
        };
        let Ok((_, schema)) = resolver.follow(&schema_file, schema) else {
            continue;
        };
        let value = schema
            .get("const")
            .or_else(|| {
                schema
                    .get("enum")
                    .and_then(Value::as_array)
                    .filter(|values| values.len() == 1)
                    .and_then(|values| values.first())
            })
            .or_else(|| schema.get("default"));
        let text = match value {
            Some(Value::String(text)) => text.clone(),
            Some(value @ (Value::Number(_) | Value::Bool(_))) => value.to_string(),
            _ => continue,
        };
        if crate::header_text::is_field_value(&text) && crate::header_text::is_field_name(name) {
            fixed.push((name.to_ascii_lowercase(), text));
        }
    }
    fixed
}
