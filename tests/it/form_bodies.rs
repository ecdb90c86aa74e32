//! Form and multipart request bodies as the document's `encoding` says
//! (docs/contract.md §2.3, "Form and multipart bodies"):
//! a real gateway invokes the real Stripe document, a Swagger 2.0 document
//! with `formData`, and OpenAPI 3.0/3.1 documents with and without
//! `encoding`, against the recording backend, and each test compares the
//! exact bytes the backend received.

use crate::backend::{Backend, Recorded};
use crate::corpus;
use crate::support::*;
use base64::Engine;
use serde_json::{Value, json};

/// Calls `name` and returns the one request the backend received.
async fn sent(gateway: &TestGateway, backend: &Backend, name: &str, arguments: Value) -> Recorded {
    let before = backend.count();
    let payload = gateway
        .tool(
            "invoke_tool",
            json!({"name": name, "arguments": arguments.clone()}),
        )
        .await;
    assert!(
        !payload.is_error,
        "{name}({arguments}) failed: {}",
        payload.payload
    );
    assert_eq!(backend.count(), before + 1, "{name} sends one request");
    backend.last()
}

fn body_text(request: &Recorded) -> String {
    String::from_utf8(request.body.clone()).expect("a form body is ASCII")
}

/// The real Stripe document, served against the recording backend.
async fn stripe() -> (Backend, TestGateway) {
    let backend = Backend::start().await;
    let document =
        std::fs::read_to_string(corpus::vendored().require("stripe.com_stripe_2025-10-15.json"))
            .unwrap();
    let sidecar = json!({"backend": {"baseUrl": backend.base}}).to_string();
    let gateway = TestGateway::with_files(
        &[("stripe.json", document), ("stripe.sezzlee.json", sidecar)],
        |_| {},
    )
    .await;
    (backend, gateway)
}

#[tokio::test]
async fn stripe_nested_members_are_sent_as_deep_objects() {
    let (backend, gateway) = stripe().await;

    // The issue's own example: metadata and expand are deepObject members.
    let request = sent(
        &gateway,
        &backend,
        "post_refunds",
        json!({"charge": "ch_123", "amount": 500, "metadata": {"reason": "dup"}, "expand": ["charge"]}),
    )
    .await;
    assert_eq!(request.method, "POST");
    assert_eq!(request.path(), "/v1/refunds");
    assert_eq!(
        request.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(
        body_text(&request),
        "amount=500&charge=ch_123&expand[0]=charge&metadata[reason]=dup"
    );

    // Arrays of objects, nested twice: line_items[1][price_data][product_data][name].
    let request = sent(
        &gateway,
        &backend,
        "post_checkout_sessions",
        json!({
            "mode": "payment",
            "success_url": "https://example.com/ok?x=1",
            "line_items": [
                {"price": "price_1", "quantity": 2},
                {"price_data": {"currency": "usd", "product_data": {"name": "T shirt"}, "unit_amount": 500}, "quantity": 1}
            ],
            "metadata": {"order": "A&B=1"}
        }),
    )
    .await;
    assert_eq!(request.path(), "/v1/checkout/sessions");
    assert_eq!(
        body_text(&request),
        "line_items[0][price]=price_1&line_items[0][quantity]=2\
         &line_items[1][price_data][currency]=usd\
         &line_items[1][price_data][product_data][name]=T%20shirt\
         &line_items[1][price_data][unit_amount]=500&line_items[1][quantity]=1\
         &metadata[order]=A%26B%3D1&mode=payment\
         &success_url=https%3A%2F%2Fexample.com%2Fok%3Fx%3D1"
    );

    // Objects, arrays of scalars and of objects, and a plain member.
    let request = sent(
        &gateway,
        &backend,
        "post_customers",
        json!({
            "name": "Ada",
            "address": {"city": "Paris", "line1": "1 rue"},
            "preferred_locales": ["fr", "en"],
            "metadata": {"a": "1"},
            "tax_id_data": [{"type": "eu_vat", "value": "FR123"}]
        }),
    )
    .await;
    assert_eq!(
        body_text(&request),
        "address[city]=Paris&address[line1]=1%20rue&metadata[a]=1&name=Ada\
         &preferred_locales[0]=fr&preferred_locales[1]=en\
         &tax_id_data[0][type]=eu_vat&tax_id_data[0][value]=FR123"
    );

    // Stripe's way to clear metadata: the empty string, sent as it is.
    let request = sent(
        &gateway,
        &backend,
        "post_customers_customer",
        json!({"customer": "cus_1", "metadata": ""}),
    )
    .await;
    assert_eq!(request.path(), "/v1/customers/cus_1");
    assert_eq!(body_text(&request), "metadata=");
}

/// A Swagger 2.0 document with `formData` parameters, the classic
/// petstore's form and upload operations with every `collectionFormat`.
fn swagger_forms(backend: &str) -> Value {
    let form = |name: &str, kind: &str, extra: Value| {
        let mut parameter = json!({"name": name, "in": "formData", "type": kind});
        if let (Some(parameter), Some(extra)) = (parameter.as_object_mut(), extra.as_object()) {
            parameter.extend(extra.clone());
        }
        parameter
    };
    let strings = json!({"items": {"type": "string"}});
    json!({
        "swagger": "2.0",
        "info": {"title": "Forms", "version": "1"},
        "host": backend.trim_start_matches("http://"),
        "schemes": ["http"],
        "paths": {
            "/pet/{petId}": {"post": {
                "operationId": "updatePetWithForm",
                "consumes": ["application/x-www-form-urlencoded"],
                "parameters": [
                    {"name": "petId", "in": "path", "required": true, "type": "string"},
                    form("name", "string", json!({})),
                    form("status", "string", json!({})),
                    form("tags", "array", strings.clone()),
                    form("ids", "array", json!({"items": {"type": "integer"}, "collectionFormat": "multi"})),
                    form("pipes", "array", json!({"items": {"type": "string"}, "collectionFormat": "pipes"})),
                    form("urgent", "boolean", json!({}))
                ],
                "responses": {"200": {"description": "ok"}}
            }},
            "/pet/{petId}/uploadImage": {"post": {
                "operationId": "uploadFile",
                "consumes": ["multipart/form-data"],
                "parameters": [
                    {"name": "petId", "in": "path", "required": true, "type": "string"},
                    form("additionalMetadata", "string", json!({})),
                    form("file", "file", json!({})),
                    form("labels", "array", strings.clone()),
                    form("sizes", "array", json!({"items": {"type": "integer"}, "collectionFormat": "multi"}))
                ],
                "responses": {"200": {"description": "ok"}}
            }}
        }
    })
}

/// One part of a multipart body: its header lines (lower-cased names) and
/// its content.
#[derive(Debug)]
struct Part {
    headers: Vec<String>,
    content: Vec<u8>,
}

impl Part {
    fn disposition(&self) -> &str {
        self.headers
            .iter()
            .find(|h| h.starts_with("content-disposition:"))
            .map(String::as_str)
            .unwrap_or_default()
    }

    fn header(&self, name: &str) -> Option<&str> {
        let prefix = format!("{name}:");
        self.headers
            .iter()
            .find(|h| h.starts_with(&prefix))
            .map(|h| h[prefix.len()..].trim())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.content).into_owned()
    }
}

/// Splits a recorded multipart body at its boundary.
fn parts(request: &Recorded) -> Vec<Part> {
    let content_type = request.header("content-type").unwrap_or_default();
    let boundary = content_type
        .strip_prefix("multipart/form-data; boundary=")
        .unwrap_or_else(|| panic!("a multipart body: {content_type}"));
    let delimiter = format!("--{boundary}");
    let body = &request.body;
    let mut starts = Vec::new();
    let mut at = 0;
    while let Some(found) = find(&body[at..], delimiter.as_bytes()) {
        starts.push(at + found);
        at += found + delimiter.len();
    }
    let mut found = Vec::new();
    for pair in starts.windows(2) {
        let chunk = &body[pair[0] + delimiter.len()..pair[1]];
        let chunk = chunk.strip_prefix(b"\r\n").unwrap_or(chunk);
        let chunk = chunk.strip_suffix(b"\r\n").unwrap_or(chunk);
        let split = find(chunk, b"\r\n\r\n").expect("a part has a blank line");
        let headers = String::from_utf8_lossy(&chunk[..split])
            .lines()
            .map(|line| match line.split_once(':') {
                Some((name, value)) => format!("{}:{value}", name.to_ascii_lowercase()),
                None => line.to_string(),
            })
            .collect();
        found.push(Part {
            headers,
            content: chunk[split + 4..].to_vec(),
        });
    }
    found
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn named<'p>(parts: &'p [Part], name: &str) -> Vec<&'p Part> {
    let quoted = format!("name=\"{name}\"");
    parts
        .iter()
        .filter(|part| {
            part.disposition()
                .split(';')
                .any(|field| field.trim() == quoted)
        })
        .collect()
}

#[tokio::test]
async fn swagger_form_data_follows_collection_format() {
    let backend = Backend::start().await;
    let gateway = TestGateway::with_files(
        &[("forms.json", swagger_forms(&backend.base).to_string())],
        |_| {},
    )
    .await;

    let request = sent(
        &gateway,
        &backend,
        "update_pet_with_form",
        json!({"petId": "7", "name": "Rex & co", "status": "sold", "tags": ["a", "b c"],
               "ids": [1, 2], "pipes": ["x", "y"], "urgent": true}),
    )
    .await;
    assert_eq!(request.path(), "/pet/7");
    assert_eq!(
        request.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(
        body_text(&request),
        "name=Rex%20%26%20co&status=sold&tags=a,b%20c&ids=1&ids=2&pipes=x%7Cy&urgent=true"
    );

    let image = [0x89, b'P', b'N', b'G', 0x00, 0xFF, b'\r', b'\n'];
    let encoded = base64::engine::general_purpose::STANDARD.encode(image);
    let request = sent(
        &gateway,
        &backend,
        "upload_file",
        json!({"petId": "7", "additionalMetadata": "front", "file": encoded,
               "labels": ["a", "b"], "sizes": [10, 20]}),
    )
    .await;
    let parts = parts(&request);
    let file = named(&parts, "file");
    assert_eq!(file.len(), 1, "{parts:?}");
    assert_eq!(file[0].content, image, "the file arrives decoded");
    assert!(file[0].disposition().contains("filename="), "{file:?}");
    assert_eq!(
        file[0].header("content-type"),
        Some("application/octet-stream")
    );
    let metadata = named(&parts, "additionalMetadata");
    assert_eq!(metadata.len(), 1);
    assert_eq!(metadata[0].text(), "front");
    assert_eq!(metadata[0].header("content-type"), None, "a text part");
    // csv: one part, joined; multi: one part per item.
    let labels = named(&parts, "labels");
    assert_eq!(labels.len(), 1, "{parts:?}");
    assert_eq!(labels[0].text(), "a,b");
    let sizes: Vec<String> = named(&parts, "sizes").iter().map(|p| p.text()).collect();
    assert_eq!(sizes, ["10", "20"]);
}

/// The same form and multipart operations in an OpenAPI document of
/// `version`, with `encoding` as given.
fn openapi_forms(version: &str, backend: &str, form_encoding: Value) -> Value {
    json!({
        "openapi": version,
        "info": {"title": "Forms", "version": "1"},
        "servers": [{"url": backend}],
        "paths": {
            "/prefs": {"post": {
                "operationId": "setPrefs",
                "requestBody": {"content": {"application/x-www-form-urlencoded": {
                    "schema": {"type": "object", "properties": {
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "filter": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}},
                        "n": {"type": "integer"},
                        "note": {"type": ["string", "null"]},
                        "doc": {"type": "object"}
                    }},
                    "encoding": form_encoding
                }}},
                "responses": {"200": {"description": "ok"}}
            }},
            "/upload": {"post": {
                "operationId": "upload",
                "requestBody": {"content": {"multipart/form-data": {
                    "schema": {"type": "object", "properties": {
                        "meta": {"type": "object", "properties": {"owner": {"type": "string"}}},
                        "file": {"type": "string", "format": "binary"},
                        "notes": {"type": "array", "items": {"type": "string"}},
                        "count": {"type": "integer"},
                        "raw": {"type": "string"}
                    }},
                    "encoding": {
                        "file": {
                            "contentType": "image/png, image/jpeg",
                            "headers": {
                                "X-Rate-Limit-Limit": {"schema": {"type": "integer", "default": 5}},
                                "X-Kind": {"$ref": "#/components/headers/Kind"},
                                "X-Asked": {"schema": {"type": "string"}},
                                "Content-Type": {"schema": {"type": "string", "default": "text/html"}}
                            }
                        },
                        "raw": {"contentType": "application/json"}
                    }
                }}},
                "responses": {"200": {"description": "ok"}}
            }}
        },
        "components": {"headers": {"Kind": {"schema": {"type": "string", "enum": ["photo"]}}}}
    })
}

async fn forms_gateway(version: &str, form_encoding: Value) -> (Backend, TestGateway) {
    let backend = Backend::start().await;
    let gateway = TestGateway::with_files(
        &[(
            "forms.json",
            openapi_forms(version, &backend.base, form_encoding).to_string(),
        )],
        |_| {},
    )
    .await;
    (backend, gateway)
}

fn prefs() -> Value {
    json!({"tags": ["x", "y"], "filter": {"a": 1, "b": "z w"}, "n": 3, "note": null})
}

#[tokio::test]
async fn form_defaults_follow_the_document_version() {
    // OpenAPI 3.0: form, exploded, for every member: an object's members
    // become pairs of their own; null is left out.
    let (backend, gateway) = forms_gateway("3.0.3", json!({})).await;
    let request = sent(&gateway, &backend, "set_prefs", prefs()).await;
    assert_eq!(body_text(&request), "tags=x&tags=y&a=1&b=z%20w&n=3");

    // OpenAPI 3.1 with no style named: by media type, an object is JSON.
    let (backend, gateway) = forms_gateway("3.1.0", json!({})).await;
    let request = sent(&gateway, &backend, "set_prefs", prefs()).await;
    assert_eq!(
        body_text(&request),
        "tags=x&tags=y&filter=%7B%22a%22%3A1%2C%22b%22%3A%22z%20w%22%7D&n=3"
    );

    // Named styles win in either version; a contentType alone means JSON.
    let encoding = json!({
        "tags": {"style": "pipeDelimited", "explode": false},
        "filter": {"style": "deepObject", "explode": true},
        "doc": {"contentType": "application/json"}
    });
    for version in ["3.0.3", "3.1.0"] {
        let (backend, gateway) = forms_gateway(version, encoding.clone()).await;
        let mut arguments = prefs();
        arguments["doc"] = json!({"k": "v"});
        let request = sent(&gateway, &backend, "set_prefs", arguments).await;
        assert_eq!(
            body_text(&request),
            "tags=x%7Cy&filter[a]=1&filter[b]=z%20w&n=3&doc=%7B%22k%22%3A%22v%22%7D",
            "OpenAPI {version}"
        );
    }
}

#[tokio::test]
async fn multipart_parts_take_their_media_type_and_fixed_headers() {
    let (backend, gateway) = forms_gateway("3.1.0", json!({})).await;
    let image = [0x89, b'P', b'N', b'G', 0x00];
    let request = sent(
        &gateway,
        &backend,
        "upload",
        json!({
            "meta": {"owner": "ada"},
            "file": base64::engine::general_purpose::STANDARD.encode(image),
            "notes": ["one", "two"],
            "count": 2,
            "raw": "text"
        }),
    )
    .await;
    let parts = parts(&request);
    let meta = named(&parts, "meta");
    assert_eq!(meta[0].header("content-type"), Some("application/json"));
    assert_eq!(meta[0].text(), r#"{"owner":"ada"}"#);

    let file = named(&parts, "file");
    assert_eq!(file[0].content, image);
    assert_eq!(file[0].header("content-type"), Some("image/png"));
    assert_eq!(file[0].header("x-rate-limit-limit"), Some("5"));
    assert_eq!(file[0].header("x-kind"), Some("photo"), "a $ref header");
    assert_eq!(file[0].header("x-asked"), None, "no value to send");

    let notes: Vec<String> = named(&parts, "notes").iter().map(|p| p.text()).collect();
    assert_eq!(notes, ["one", "two"], "one part per item");
    let count = named(&parts, "count");
    assert_eq!(
        (count[0].text(), count[0].header("content-type")),
        ("2".to_string(), None)
    );
    // A JSON contentType makes even a string JSON text.
    assert_eq!(named(&parts, "raw")[0].text(), r#""text""#);
    assert_eq!(parts.len(), 6, "{parts:?}");
}
