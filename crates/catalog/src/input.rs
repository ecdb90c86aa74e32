//! The flat inputSchema of an operation, and where each member goes.
//!
//! Agents see one flat object: path, query, header and cookie parameters
//! and the members of an object body are all top-level arguments. The
//! gateway records, per member, its location and serialisation so a call
//! can be dispatched exactly.

use super::diagnostics::{Diagnostic, codes};
use super::form_encoding::{FormKind, member_rule};
use super::media_type::{base_media_type, is_json_media_type};
use super::schema::{Converter, Dialect, Direction, Reached, Schema};
use super::{Argument, Location, RequestBody, Style};
use serde_json::{Map, Value, json};
use std::borrow::Cow;
use std::sync::Arc;

/// Header parameters OpenAPI says to ignore: the gateway sets them itself.
const IGNORED_HEADERS: [&str; 3] = ["accept", "content-type", "authorization"];

/// The input side of one operation.
pub struct Input {
    pub schema: Schema,
    pub arguments: Vec<Argument>,
    pub body: Option<RequestBody>,
}

/// Builds the input of one operation. `parameters` are already merged
/// (path item + operation); `Err` carries the diagnostic that leaves the
/// operation out.
pub struct InputBuilder<'c, 'r> {
    pub converter: &'c mut Converter<'r>,
    pub file: Arc<str>,
    pub pointer: String,
    pub diagnostics: Vec<Diagnostic>,
    properties: Map<String, Value>,
    required: Vec<String>,
    arguments: Vec<Argument>,
    reached: Reached,
    body: Option<RequestBody>,
}

impl<'c, 'r> InputBuilder<'c, 'r> {
    pub fn new(converter: &'c mut Converter<'r>, file: Arc<str>, pointer: String) -> Self {
        InputBuilder {
            converter,
            file,
            pointer,
            diagnostics: Vec::new(),
            properties: Map::new(),
            required: Vec::new(),
            arguments: Vec::new(),
            reached: Reached::new(),
            body: None,
        }
    }

    /// Adds one resolved parameter object (found in `param_file`).
    pub fn parameter(&mut self, param_file: &Arc<str>, param: &Value) -> Result<(), String> {
        let (Some(name), Some(location)) = (
            param.get("name").and_then(Value::as_str),
            param.get("in").and_then(Value::as_str),
        ) else {
            self.warn(
                codes::INVALID_OPERATION,
                "a parameter without `name` or `in` was skipped",
            );
            return Ok(());
        };
        let location = match location {
            "path" => Location::Path,
            "query" => Location::Query,
            "header" => Location::Header,
            "cookie" => Location::Cookie,
            "formData" => Location::BodyMember,
            "body" => return self.swagger_body(param_file, param),
            other => {
                self.warn(
                    codes::INVALID_OPERATION,
                    &format!("parameter '{name}' is in '{other}', which is not a parameter location; skipped"),
                );
                return Ok(());
            }
        };
        if location == Location::Header
            && IGNORED_HEADERS.contains(&name.to_ascii_lowercase().as_str())
        {
            return Ok(());
        }
        let (schema, json_encoded) = self.parameter_schema(param_file, param)?;
        let required = location == Location::Path
            || param.get("required").and_then(Value::as_bool) == Some(true);
        let (style, explode) = serialization(self.converter.dialect(), location, param);
        let member = self.unique_member(name, location);
        self.add_member(&member, schema, required);
        self.arguments.push(Argument {
            member,
            wire_name: name.to_string(),
            location,
            style,
            explode,
            allow_reserved: param.get("allowReserved").and_then(Value::as_bool) == Some(true),
            json_encoded,
            encoding: None,
        });
        if location == Location::BodyMember && self.body.is_none() {
            self.body = Some(RequestBody {
                media_type: "application/x-www-form-urlencoded".to_string(),
                required: false,
            });
        }
        if location == Location::BodyMember && is_file_param(param) {
            self.body = Some(RequestBody {
                media_type: "multipart/form-data".to_string(),
                required: false,
            });
        }
        Ok(())
    }

    /// Swagger 2.0 `formData` parameters use the media type `consumes` names.
    pub fn prefer_form_media_type(&mut self, consumes: &[String]) {
        if let Some(body) = &mut self.body
            && body.media_type == "application/x-www-form-urlencoded"
            && consumes
                .iter()
                .any(|c| c.starts_with("multipart/form-data"))
            && !consumes
                .iter()
                .any(|c| c.starts_with("application/x-www-form-urlencoded"))
        {
            body.media_type = "multipart/form-data".to_string();
        }
    }

    /// Path template variables the document forgot to declare still have
    /// to be sent: they become required strings.
    pub fn undeclared_path_parameters(&mut self, path: &str) {
        for name in path_variables(path) {
            let declared = self
                .arguments
                .iter()
                .any(|a| a.location == Location::Path && a.wire_name == name);
            if declared {
                continue;
            }
            self.warn(
                codes::INVALID_OPERATION,
                &format!("path variable '{{{name}}}' is not declared as a parameter; it is accepted as a string"),
            );
            let member = self.unique_member(&name, Location::Path);
            self.add_member(&member, json!({"type": "string"}), true);
            self.arguments.push(Argument {
                member,
                wire_name: name,
                location: Location::Path,
                style: Style::Simple,
                explode: false,
                allow_reserved: false,
                json_encoded: false,
                encoding: None,
            });
        }
    }

    /// An OpenAPI 3.x `requestBody`, already resolved.
    pub fn request_body(&mut self, body_file: &Arc<str>, body: &Value) -> Result<(), String> {
        let required = body.get("required").and_then(Value::as_bool) == Some(true);
        let Some(content) = body
            .get("content")
            .and_then(Value::as_object)
            .filter(|c| !c.is_empty())
        else {
            self.warn(
                codes::UNSUPPORTED_BODY,
                "the request body declares no content; the operation is published without a body",
            );
            return Ok(());
        };
        let Some((media_type, media)) = choose_request_media_type(content) else {
            return Ok(());
        };
        let schema = media.get("schema");
        let encoding = media.get("encoding").and_then(Value::as_object);
        self.body_schema(body_file, media_type, schema, encoding, required)
    }

    fn swagger_body(&mut self, param_file: &Arc<str>, param: &Value) -> Result<(), String> {
        let required = param.get("required").and_then(Value::as_bool) == Some(true);
        // The media type is settled by the caller from `consumes`.
        self.body_schema(
            param_file,
            "application/json",
            param.get("schema"),
            None,
            required,
        )
    }

    /// Sets the JSON media type Swagger 2.0 `consumes` asks for.
    pub fn set_swagger_media_type(&mut self, consumes: &[String]) {
        if let Some(body) = &mut self.body
            && body.media_type == "application/json"
            && let Some(json_type) = consumes.iter().find(|c| is_json_media_type(c))
        {
            body.media_type = json_type.clone();
        }
    }

    fn body_schema(
        &mut self,
        file: &Arc<str>,
        media_type: &str,
        schema: Option<&Value>,
        encoding: Option<&Map<String, Value>>,
        required: bool,
    ) -> Result<(), String> {
        let send_as = if media_type == "*/*" || media_type == "application/*" {
            "application/json"
        } else {
            media_type
        };
        self.body = Some(RequestBody {
            media_type: send_as.to_string(),
            required,
        });
        let flattenable = is_json_media_type(send_as)
            || send_as.starts_with("application/x-www-form-urlencoded")
            || send_as.starts_with("multipart/form-data");
        if flattenable && let Some(schema) = schema {
            let mut members = Vec::new();
            let mut required_members = Vec::new();
            if flatten_object(
                self.converter,
                file,
                schema,
                &mut members,
                &mut required_members,
                0,
            )? {
                for (member_file, name, member_schema) in members {
                    if self
                        .converter
                        .is_left_out(&member_file, member_schema, Direction::Input)
                    {
                        continue;
                    }
                    let converted = self.converter.convert(
                        &member_file,
                        member_schema,
                        Direction::Input,
                        &mut self.reached,
                    )?;
                    let member = self.unique_member(&name, Location::BodyMember);
                    let is_required = required && required_members.contains(&name);
                    self.add_member(&member, converted, is_required);
                    let rule = member_rule(
                        self.converter.dialect(),
                        FormKind::of(send_as),
                        encoding.and_then(|e| e.get(&name)),
                        self.converter.resolver(),
                        file,
                    );
                    self.arguments.push(Argument {
                        member,
                        wire_name: name,
                        location: Location::BodyMember,
                        style: rule.style,
                        explode: rule.explode,
                        allow_reserved: rule.allow_reserved,
                        json_encoded: false,
                        encoding: rule.encoding,
                    });
                }
                return Ok(());
            }
        }
        let converted = match schema {
            Some(schema) => {
                self.converter
                    .convert(file, schema, Direction::Input, &mut self.reached)?
            }
            None if is_json_media_type(send_as) => json!({}),
            None if send_as.starts_with("text/") => json!({"type": "string"}),
            None => json!({"type": "string", "contentEncoding": "base64"}),
        };
        let member = self.unique_member("body", Location::Body);
        self.add_member(&member, converted, required);
        self.arguments
            .push(body_argument(member, "body".to_string(), Location::Body));
        Ok(())
    }

    /// The finished input.
    pub fn finish(mut self) -> Result<(Input, Vec<Diagnostic>), String> {
        let mut root = Map::new();
        root.insert("type".to_string(), json!("object"));
        root.insert(
            "properties".to_string(),
            Value::Object(std::mem::take(&mut self.properties)),
        );
        if !self.required.is_empty() {
            // Sorted: body members arrive in the source's key order, and a
            // version must not depend on key order.
            self.required.sort();
            root.insert("required".to_string(), json!(self.required));
        }
        root.insert("additionalProperties".to_string(), json!(false));
        let reached = std::mem::take(&mut self.reached);
        let schema = self.converter.finish(root, reached, Direction::Input)?;
        Ok((
            Input {
                schema,
                arguments: self.arguments,
                body: self.body,
            },
            self.diagnostics,
        ))
    }

    fn parameter_schema(
        &mut self,
        file: &Arc<str>,
        param: &Value,
    ) -> Result<(Value, bool), String> {
        // Borrowed from the document where it is written there, so that
        // what the converter reports points into the document.
        let empty = json!({});
        let (source, json_encoded) = if let Some(schema) = param.get("schema") {
            (Cow::Borrowed(schema), false)
        } else if let Some(content) = param.get("content").and_then(Value::as_object) {
            let schema = content.values().next().and_then(|m| m.get("schema"));
            (Cow::Borrowed(schema.unwrap_or(&empty)), true)
        } else {
            // Swagger 2.0 (and sloppy 3.0): the schema keywords sit on the parameter.
            (Cow::Owned(swagger_parameter_schema(param)), false)
        };
        let mut converted =
            self.converter
                .convert(file, &source, Direction::Input, &mut self.reached)?;
        if let Value::Object(map) = &mut converted {
            for key in ["description", "deprecated"] {
                if let Some(value) = param.get(key)
                    && !map.contains_key(key)
                    && (value.is_string() || value.is_boolean())
                {
                    map.insert(key.to_string(), value.clone());
                }
            }
            if let Some(example) = param.get("example")
                && !map.contains_key("examples")
            {
                map.insert("examples".to_string(), json!([example]));
            }
        }
        Ok((converted, json_encoded))
    }

    /// A member name not yet taken: parameters that share a name get their
    /// location in front (`query_id`), body members get `body_`.
    fn unique_member(&mut self, name: &str, location: Location) -> String {
        if !self.properties.contains_key(name) {
            return name.to_string();
        }
        let prefix = match location {
            Location::Path => "path",
            Location::Query => "query",
            Location::Header => "header",
            Location::Cookie => "cookie",
            Location::BodyMember | Location::Body => "body",
        };
        let mut candidate = format!("{prefix}_{name}");
        let mut n = 2;
        while self.properties.contains_key(&candidate) {
            candidate = format!("{prefix}_{name}_{n}");
            n += 1;
        }
        self.warn(
            codes::NAME_COLLISION,
            &format!("argument '{name}' is declared twice; the {prefix} one is published as '{candidate}'"),
        );
        candidate
    }

    fn add_member(&mut self, member: &str, schema: Value, required: bool) {
        self.properties.insert(member.to_string(), schema);
        if required {
            self.required.push(member.to_string());
        }
    }

    fn warn(&mut self, code: &'static str, message: &str) {
        self.diagnostics.push(Diagnostic::warning(
            code,
            &self.file,
            &self.pointer,
            message,
        ));
    }
}

fn body_argument(member: String, wire_name: String, location: Location) -> Argument {
    Argument {
        member,
        wire_name,
        location,
        style: Style::Form,
        explode: true,
        allow_reserved: false,
        json_encoded: false,
        encoding: None,
    }
}

/// Collects the members of an object schema, looking through `$ref` and
/// `allOf`. `false` when the schema is not a plain object (a union, an
/// array, a map): then the body is one `body` member.
fn flatten_object<'r: 'n, 'n>(
    converter: &Converter<'r>,
    file: &Arc<str>,
    schema: &'n Value,
    members: &mut Vec<(Arc<str>, String, &'n Value)>,
    required: &mut Vec<String>,
    depth: usize,
) -> Result<bool, String> {
    if depth > 16 {
        return Ok(false);
    }
    let (file, node) = converter.resolver().follow(file, schema)?;
    let Some(map) = node.as_object() else {
        return Ok(false);
    };
    if map.contains_key("oneOf") || map.contains_key("anyOf") || map.contains_key("not") {
        return Ok(false);
    }
    match map.get("type") {
        None => {}
        Some(Value::String(t)) if t == "object" => {}
        Some(_) => return Ok(false),
    }
    let properties = map.get("properties").and_then(Value::as_object);
    let all_of = map.get("allOf").and_then(Value::as_array);
    if properties.is_none() && all_of.is_none() {
        return Ok(false);
    }
    if let Some(parts) = all_of {
        for part in parts {
            if !flatten_object(converter, &file, part, members, required, depth + 1)? {
                return Ok(false);
            }
        }
    }
    for (name, member) in properties.into_iter().flatten() {
        match members.iter_mut().find(|(_, existing, _)| existing == name) {
            Some(slot) => *slot = (file.clone(), name.clone(), member),
            None => members.push((file.clone(), name.clone(), member)),
        }
    }
    for name in map
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(name) = name.as_str()
            && !required.iter().any(|r| r == name)
        {
            required.push(name.to_string());
        }
    }
    Ok(true)
}

/// JSON first, then form encodings, then anything else in document order.
fn choose_request_media_type(content: &Map<String, Value>) -> Option<(&str, &Value)> {
    let ranked = |media_type: &str| -> u8 {
        let base = base_media_type(media_type);
        if base == "application/json" {
            0
        } else if is_json_media_type(&base) {
            1
        } else if base == "application/x-www-form-urlencoded" {
            2
        } else if base == "multipart/form-data" {
            3
        } else if base == "*/*" || base == "application/*" {
            4
        } else {
            5
        }
    };
    content
        .iter()
        .min_by_key(|(media_type, _)| (ranked(media_type), media_type.as_str()))
        .map(|(media_type, media)| (media_type.as_str(), media))
}

/// OpenAPI's defaults: form/explode for query and cookie, simple otherwise;
/// Swagger 2.0's `collectionFormat` mapped onto the same styles.
fn serialization(dialect: Dialect, location: Location, param: &Value) -> (Style, bool) {
    let default_style = match location {
        Location::Query | Location::Cookie | Location::BodyMember | Location::Body => Style::Form,
        Location::Path | Location::Header => Style::Simple,
    };
    if dialect == Dialect::Swagger2 {
        let format = param
            .get("collectionFormat")
            .and_then(Value::as_str)
            .unwrap_or("csv");
        return match format {
            "multi" => (Style::Form, true),
            "ssv" => (Style::SpaceDelimited, false),
            "pipes" => (Style::PipeDelimited, false),
            "tsv" => (Style::TabDelimited, false),
            _ => (default_style, false),
        };
    }
    let style = match param.get("style").and_then(Value::as_str) {
        Some("form") => Style::Form,
        Some("simple") => Style::Simple,
        Some("label") => Style::Label,
        Some("matrix") => Style::Matrix,
        Some("spaceDelimited") => Style::SpaceDelimited,
        Some("pipeDelimited") => Style::PipeDelimited,
        Some("deepObject") => Style::DeepObject,
        _ => default_style,
    };
    let explode = param
        .get("explode")
        .and_then(Value::as_bool)
        .unwrap_or(style == Style::Form);
    (style, explode)
}

fn is_file_param(param: &Value) -> bool {
    param.get("type").and_then(Value::as_str) == Some("file")
}

/// The schema keywords a Swagger 2.0 parameter carries inline.
fn swagger_parameter_schema(param: &Value) -> Value {
    const KEYWORDS: [&str; 17] = [
        "type",
        "format",
        "items",
        "enum",
        "default",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "minItems",
        "maxItems",
        "uniqueItems",
        "multipleOf",
        "x-nullable",
    ];
    let mut schema = Map::new();
    if let Value::Object(map) = param {
        for key in KEYWORDS {
            if let Some(value) = map.get(key) {
                schema.insert(key.to_string(), value.clone());
            }
        }
    }
    Value::Object(schema)
}

/// The `{name}` variables of a path template, in order.
pub fn path_variables(path: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else { break };
        let name = &after[..end];
        if !name.is_empty() && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
        rest = &after[end + 1..];
    }
    names
}
