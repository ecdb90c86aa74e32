//! Building the exact HTTP request for one call: a pure function of the
//! operation, the arguments and the headers to forward.
//!
//! Every argument goes where the catalog recorded it: path parameters are
//! percent-encoded as one segment each (a `../admin` value can never change
//! the path), query parameters follow their `style`/`explode`, header and
//! cookie values are refused when they hold control characters, and the
//! body is encoded per its media type. Only documented parameters are sent.

use super::form;
use base64::Engine;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value};
use sezzlee_catalog::{Argument, FormKind, Location, Operation, Style, is_json_media_type};

/// Everything but RFC 3986 unreserved characters is encoded.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');
/// `allowReserved` query values keep RFC 3986 reserved characters.
const RESERVED_OK: &AsciiSet = &COMPONENT
    .remove(b':')
    .remove(b'/')
    .remove(b'?')
    .remove(b'#')
    .remove(b'[')
    .remove(b']')
    .remove(b'@')
    .remove(b'!')
    .remove(b'$')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b'*')
    .remove(b',')
    .remove(b';')
    .remove(b'=');

/// A request ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    pub method: String,
    pub url: String,
    /// Header name (lower case) and value, in order.
    pub headers: Vec<(String, String)>,
    pub body: Option<OutgoingBody>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum OutgoingBody {
    /// Raw bytes with their `Content-Type`.
    Bytes {
        content_type: String,
        bytes: Vec<u8>,
    },
    /// `multipart/form-data` parts (the boundary is chosen when sending).
    Multipart(Vec<Part>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub name: String,
    pub bytes: Vec<u8>,
    /// Set for file parts (base64 members): sent with a filename.
    pub file: bool,
    pub content_type: Option<String>,
    /// Headers the document fixes for this part (lower-case names).
    pub headers: Vec<(String, String)>,
}

/// One argument that cannot be sent as given.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub pointer: String,
    pub message: String,
}

/// Builds the request. `base_url` has no trailing slash; `arguments` are
/// validated already (fixed variant values merged in); `binary_members`
/// names the members whose schema says `contentEncoding: base64`.
pub fn build(
    operation: &Operation,
    base_url: &str,
    arguments: &Map<String, Value>,
    binary_members: &[String],
    extra_headers: Vec<(String, String)>,
) -> Result<Outgoing, Vec<Problem>> {
    let mut problems = Vec::new();
    let mut path = operation.path.clone();
    let mut query: Vec<String> = Vec::new();
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut cookies: Vec<String> = Vec::new();
    let mut members: Vec<(&Argument, &Value)> = Vec::new();
    let mut whole_body: Option<&Value> = None;
    for argument in &operation.arguments {
        let Some(value) = arguments.get(&argument.member) else {
            continue;
        };
        if value.is_null()
            && argument.location != Location::Body
            && argument.location != Location::BodyMember
        {
            continue;
        }
        let pointer = format!("/{}", argument.member.replace('~', "~0").replace('/', "~1"));
        match argument.location {
            Location::Path => match path_value(argument, value) {
                Ok(encoded) => {
                    path = path.replace(&format!("{{{}}}", argument.wire_name), &encoded)
                }
                Err(message) => problems.push(Problem { pointer, message }),
            },
            Location::Query => query.extend(query_pairs(argument, value)),
            Location::Header => {
                let text = header_value(argument, value);
                if !sezzlee_catalog::header_text::is_field_value(&text) {
                    problems.push(Problem {
                        pointer,
                        message: "header values may not contain CR, LF or other control characters"
                            .to_string(),
                    });
                } else {
                    headers.push((argument.wire_name.to_ascii_lowercase(), text));
                }
            }
            Location::Cookie => {
                let text = scalar_text(value, argument.json_encoded);
                cookies.push(format!(
                    "{}={}",
                    argument.wire_name,
                    utf8_percent_encode(&text, COMPONENT)
                ));
            }
            Location::BodyMember => members.push((argument, value)),
            Location::Body => whole_body = Some(value),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut url = format!("{base_url}{path}");
    if !query.is_empty() {
        url.push('?');
        url.push_str(&query.join("&"));
    }
    if !cookies.is_empty() {
        headers.push(("cookie".to_string(), cookies.join("; ")));
    }
    headers.extend(extra_headers);
    let body = match (&operation.body, whole_body) {
        (Some(spec), Some(value)) => Some(whole(
            &spec.media_type,
            value,
            binary_members.iter().any(|m| m == "body"),
        )?),
        (Some(spec), None) if !members.is_empty() || spec.required => {
            Some(object_body(&spec.media_type, &members, binary_members)?)
        }
        _ => None,
    };
    Ok(Outgoing {
        method: operation.method.clone(),
        url,
        headers,
        body,
    })
}

/// One path segment: the simple/label/matrix serialisation,
/// percent-encoded so `/`, `?`, `#` and `..` cannot change the path.
fn path_value(argument: &Argument, value: &Value) -> Result<String, String> {
    // Each item is encoded on its own, so the separators stay literal and
    // a `,` or `=` inside an item cannot be mistaken for one.
    let enc = |text: &str| utf8_percent_encode(text, COMPONENT).to_string();
    let encoded = match value {
        Value::Array(items) => items
            .iter()
            .map(|v| enc(&scalar_text(v, false)))
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| {
                let separator = if argument.explode { "=" } else { "," };
                format!("{}{separator}{}", enc(k), enc(&scalar_text(v, false)))
            })
            .collect::<Vec<_>>()
            .join(","),
        other => enc(&scalar_text(other, false)),
    };
    if encoded.is_empty() || encoded.chars().all(|c| c == '.') {
        return Err(format!(
            "path parameter '{}' cannot be empty, '.' or '..'",
            argument.wire_name
        ));
    }
    Ok(match argument.style {
        Style::Label => format!(".{encoded}"),
        Style::Matrix => format!(";{}={encoded}", argument.wire_name),
        _ => encoded,
    })
}

/// Scalar and composite values as the simple style writes them: arrays
/// joined by `,`, objects as `k,v` pairs (`k=v` when exploded).
fn flatten(value: &Value, explode: bool, separator: &str) -> Vec<String> {
    match value {
        Value::Array(items) => vec![
            items
                .iter()
                .map(|v| scalar_text(v, false))
                .collect::<Vec<_>>()
                .join(separator),
        ],
        Value::Object(map) => {
            let pairs: Vec<String> = map
                .iter()
                .map(|(k, v)| {
                    if explode {
                        format!("{k}={}", scalar_text(v, false))
                    } else {
                        format!("{k}{separator}{}", scalar_text(v, false))
                    }
                })
                .collect();
            vec![pairs.join(separator)]
        }
        other => vec![scalar_text(other, false)],
    }
}

/// A scalar as text: strings raw, everything else as JSON.
pub(super) fn scalar_text(value: &Value, json_encoded: bool) -> String {
    match value {
        Value::String(text) if !json_encoded => text.clone(),
        other => other.to_string(),
    }
}

pub(super) fn encode(text: &str, allow_reserved: bool) -> String {
    let set = if allow_reserved {
        RESERVED_OK
    } else {
        COMPONENT
    };
    utf8_percent_encode(text, set).to_string()
}

/// `name=value` pairs of one query parameter per its style.
pub(super) fn query_pairs(argument: &Argument, value: &Value) -> Vec<String> {
    let name = encode(&argument.wire_name, false);
    let enc = |text: &str| encode(text, argument.allow_reserved);
    if argument.json_encoded {
        return vec![format!("{name}={}", enc(&value.to_string()))];
    }
    match (value, argument.style) {
        (Value::Object(_) | Value::Array(_), Style::DeepObject) => {
            let mut pairs = Vec::new();
            deep_object_pairs(&name, value, &enc, &mut pairs);
            pairs
        }
        (Value::Object(map), Style::Form) if argument.explode => map
            .iter()
            .map(|(k, v)| format!("{}={}", encode(k, false), enc(&scalar_text(v, false))))
            .collect(),
        (Value::Array(items), Style::Form) if argument.explode => items
            .iter()
            .map(|v| format!("{name}={}", enc(&scalar_text(v, false))))
            .collect(),
        (Value::Array(items), style) => {
            let separator = match style {
                Style::SpaceDelimited => " ",
                Style::PipeDelimited => "|",
                Style::TabDelimited => "\t",
                _ => ",",
            };
            let joined: Vec<String> = items.iter().map(|v| enc(&scalar_text(v, false))).collect();
            // `,` stays literal (the items are encoded, so it cannot be
            // confused with one); a space, `|` or tab is not allowed in a
            // query and is percent-encoded.
            let separator = if separator == "," {
                ",".to_string()
            } else {
                encode(separator, false)
            };
            vec![format!("{name}={}", joined.join(&separator))]
        }
        (Value::Object(map), _) => {
            let joined: Vec<String> = map
                .iter()
                .flat_map(|(k, v)| [enc(k), enc(&scalar_text(v, false))])
                .collect();
            vec![format!("{name}={}", joined.join(","))]
        }
        (other, _) => vec![format!("{name}={}", enc(&scalar_text(other, false)))],
    }
}

/// deepObject, nested: `name[key]=v` for an object's members and
/// `name[0]=v` for an array's items, at every depth (`line_items[0][price]=p`),
/// as Stripe, Rails and `qs` read them; `null` members are left out.
fn deep_object_pairs(
    prefix: &str,
    value: &Value,
    enc: &dyn Fn(&str) -> String,
    out: &mut Vec<String>,
) {
    match value {
        Value::Object(map) => {
            for (key, member) in map {
                deep_object_pairs(
                    &format!("{prefix}[{}]", encode(key, false)),
                    member,
                    enc,
                    out,
                );
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                deep_object_pairs(&format!("{prefix}[{index}]"), item, enc, out);
            }
        }
        Value::Null => {}
        scalar => out.push(format!("{prefix}={}", enc(&scalar_text(scalar, false)))),
    }
}

fn header_value(argument: &Argument, value: &Value) -> String {
    if argument.json_encoded {
        return value.to_string();
    }
    flatten(value, argument.explode, ",").join(",")
}

pub(super) fn problem(member: &str, message: String) -> Vec<Problem> {
    vec![Problem {
        pointer: format!("/{member}"),
        message,
    }]
}

/// The whole body from the `body` argument.
fn whole(media_type: &str, value: &Value, binary: bool) -> Result<OutgoingBody, Vec<Problem>> {
    let bytes = if binary {
        let text = value.as_str().unwrap_or_default();
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|_| {
                problem(
                    "body",
                    "body must be base64 (it is sent as raw bytes)".to_string(),
                )
            })?
    } else if is_json_media_type(media_type) {
        value.to_string().into_bytes()
    } else {
        scalar_text(value, false).into_bytes()
    };
    Ok(OutgoingBody::Bytes {
        content_type: media_type.to_string(),
        bytes,
    })
}

/// An object body from the body members (each with the argument that
/// says how it is written), per media type.
fn object_body(
    media_type: &str,
    members: &[(&Argument, &Value)],
    binary_members: &[String],
) -> Result<OutgoingBody, Vec<Problem>> {
    match FormKind::of(media_type) {
        FormKind::UrlEncoded => Ok(OutgoingBody::Bytes {
            content_type: media_type.to_string(),
            bytes: form::url_encoded(members).into_bytes(),
        }),
        FormKind::Multipart => Ok(OutgoingBody::Multipart(form::multipart(
            members,
            binary_members,
        )?)),
        FormKind::Other => {
            let object: Map<String, Value> = members
                .iter()
                .map(|(argument, value)| (argument.wire_name.clone(), (*value).clone()))
                .collect();
            Ok(OutgoingBody::Bytes {
                content_type: media_type.to_string(),
                bytes: Value::Object(object).to_string().into_bytes(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sezzlee_catalog::RequestBody;
    use sezzlee_catalog::sidecar::BackendConfig;
    use std::sync::Arc;

    fn arg(member: &str, location: Location, style: Style, explode: bool) -> Argument {
        Argument {
            member: member.to_string(),
            wire_name: member.to_string(),
            location,
            style,
            explode,
            allow_reserved: false,
            json_encoded: false,
            encoding: None,
        }
    }

    fn op(path: &str, arguments: Vec<Argument>, body: Option<&str>) -> Operation {
        Operation {
            method: "POST".to_string(),
            path: path.to_string(),
            base_url: None,
            arguments,
            body: body.map(|m| RequestBody {
                media_type: m.to_string(),
                required: false,
            }),
            backend: Arc::new(BackendConfig::default()),
            security: None,
            security_schemes: Arc::new(Map::new()),
            quota: None,
        }
    }

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn path_values_stay_one_segment() {
        let o = op(
            "/files/{name}/meta",
            vec![arg("name", Location::Path, Style::Simple, false)],
            None,
        );
        let built = build(
            &o,
            "http://h",
            &args(json!({"name": "../admin?x=1#y z/é"})),
            &[],
            vec![],
        )
        .unwrap();
        assert_eq!(
            built.url,
            "http://h/files/..%2Fadmin%3Fx%3D1%23y%20z%2F%C3%A9/meta"
        );
        for bad in [json!(".."), json!("."), json!("")] {
            assert!(build(&o, "http://h", &args(json!({"name": bad})), &[], vec![]).is_err());
        }
        let list = build(&o, "http://h", &args(json!({"name": [1, 2]})), &[], vec![]).unwrap();
        assert_eq!(list.url, "http://h/files/1,2/meta");
    }

    #[test]
    fn query_styles_serialise_as_openapi_says() {
        let o = op(
            "/q",
            vec![
                arg("ids", Location::Query, Style::Form, true),
                arg("tags", Location::Query, Style::Form, false),
                arg("filter", Location::Query, Style::DeepObject, true),
                arg("words", Location::Query, Style::SpaceDelimited, false),
                arg("pipes", Location::Query, Style::PipeDelimited, false),
                arg("q", Location::Query, Style::Form, true),
            ],
            None,
        );
        let built = build(
            &o,
            "http://h",
            &args(json!({"ids": [1, 2], "tags": ["a b", "c"], "filter": {"status": "open", "min": 3}, "words": ["x", "y"], "pipes": ["p", "q"], "q": "a&b=c"})),
            &[],
            vec![],
        )
        .unwrap();
        assert_eq!(
            built.url,
            "http://h/q?ids=1&ids=2&tags=a%20b,c&filter[status]=open&filter[min]=3&words=x%20y&pipes=p%7Cq&q=a%26b%3Dc"
        );
    }

    #[test]
    fn headers_with_control_characters_are_refused() {
        let o = op(
            "/h",
            vec![arg("X-Trace", Location::Header, Style::Simple, false)],
            None,
        );
        let err = build(
            &o,
            "http://h",
            &args(json!({"X-Trace": "a\r\nSet-Cookie: x"})),
            &[],
            vec![],
        )
        .unwrap_err();
        assert_eq!(err[0].pointer, "/X-Trace");
        let ok = build(
            &o,
            "http://h",
            &args(json!({"X-Trace": "abc"})),
            &[],
            vec![],
        )
        .unwrap();
        assert_eq!(ok.headers, vec![("x-trace".to_string(), "abc".to_string())]);
    }

    #[test]
    fn bodies_are_encoded_per_media_type() {
        let members = vec![
            arg("item", Location::BodyMember, Style::Form, true),
            arg("tags", Location::BodyMember, Style::Form, true),
        ];
        let json_op = op("/b", members.clone(), Some("application/json"));
        let built = build(
            &json_op,
            "http://h",
            &args(json!({"item": "x", "tags": ["a"]})),
            &[],
            vec![],
        )
        .unwrap();
        assert_eq!(
            built.body,
            Some(OutgoingBody::Bytes {
                content_type: "application/json".to_string(),
                bytes: br#"{"item":"x","tags":["a"]}"#.to_vec()
            })
        );
        let form_op = op("/b", members, Some("application/x-www-form-urlencoded"));
        let built = build(
            &form_op,
            "http://h",
            &args(json!({"item": "a b&c", "tags": ["1", "2"]})),
            &[],
            vec![],
        )
        .unwrap();
        assert_eq!(
            built.body,
            Some(OutgoingBody::Bytes {
                content_type: "application/x-www-form-urlencoded".to_string(),
                bytes: b"item=a%20b%26c&tags=1&tags=2".to_vec()
            })
        );
        let upload = op(
            "/u",
            vec![arg("file", Location::BodyMember, Style::Form, true)],
            Some("multipart/form-data"),
        );
        let built = build(
            &upload,
            "http://h",
            &args(json!({"file": "aGVsbG8="})),
            &["file".to_string()],
            vec![],
        )
        .unwrap();
        let Some(OutgoingBody::Multipart(parts)) = built.body else {
            panic!("multipart expected")
        };
        assert_eq!(
            (parts[0].bytes.as_slice(), parts[0].file),
            (b"hello".as_slice(), true)
        );
    }
}
