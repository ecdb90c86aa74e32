//! The OpenAPI converter on generated documents (hostile input).
//!
//! Why this exists: the converter meets documents nobody wrote by hand
//! (thousands of public APIs, generators, half-edited files), and one
//! panic, one schema a client cannot compile or one version that moves
//! with key order hurts every caller of the gateway. The example-based
//! tests (`tests/it/catalog_rules.rs`) check each rule; these properties
//! check that the rules hold *together* on documents drawn at random:
//! OpenAPI 3.0, 3.1 and Swagger 2.0 shapes with random paths, parameters,
//! bodies and responses, and schemas with `$ref` cycles and dangling
//! references, `allOf`/`oneOf`/`anyOf`, random regular expressions,
//! formats, enums, numbers at the edges and names in any script.
//!
//! For every generated document:
//! - building it never panics;
//! - every tool's schemas (the published input and output schemas and the
//!   full inputSchema the gateway validates with) compile under a strict
//!   2020-12 validator: valid against the 2020-12 meta-schema, built by
//!   `jsonschema` as Draft 2020-12 with formats validated, every `pattern`
//!   and `patternProperties` key an ECMA-262 expression with the `u` flag
//!   (`regress`, as `src/ecma_pattern.rs` checks them), every `$ref` one of
//!   the schema's own `$defs`;
//! - versions are deterministic: the same document built twice, or with
//!   every object's keys in reverse order, gives the same names and
//!   versions and the same fingerprint.
//!
//! Case counts are sized for CI (about 10 s on two cores in all);
//! `PROPTEST_CASES=N` runs a longer campaign and `PROPTEST_RNG_SEED=S`
//! repeats one (the seed of every run is printed when a property fails):
//! `PROPTEST_CASES=10000 cargo test --release -p sezzlee-catalog --test generated_documents`.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde_json::{Map, Value, json};
use sezzlee_catalog::{Catalog, Sources};

// ------------------------------------------------------------ the runner

/// `default_cases` cases unless `PROPTEST_CASES` says otherwise, a seed
/// from `PROPTEST_RNG_SEED` or a fresh one, no failure files written.
fn runner(default_cases: u32) -> (TestRunner, u64) {
    let seed = std::env::var("PROPTEST_RNG_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            (nanos as u64) ^ u64::from(std::process::id()).rotate_left(32)
        });
    seeded_runner(default_cases, seed)
}

/// A runner of `default_cases` cases (or `PROPTEST_CASES`) from `seed`.
fn seeded_runner(default_cases: u32, seed: u64) -> (TestRunner, u64) {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default_cases);
    let config = Config {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(seed),
        ..Config::default()
    };
    (TestRunner::new(config), seed)
}

/// Runs `test` on `strategy`, panicking with the minimal failing input and
/// the seed that reproduces the run.
fn check<S: Strategy>(
    name: &str,
    default_cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let (mut runner, seed) = runner(default_cases);
    let cases = runner.config().cases;
    let started = std::time::Instant::now();
    if let Err(failure) = runner.run(&strategy, test) {
        panic!("{name}: {failure}\nreproduce with PROPTEST_RNG_SEED={seed} (cases: {cases})");
    }
    eprintln!(
        "{name}: {cases} cases passed in {:.1} s (seed {seed})",
        started.elapsed().as_secs_f64()
    );
}

// ------------------------------------------------------------ generators

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Swagger2,
    OpenApi30,
    OpenApi31,
}

fn dialect() -> impl Strategy<Value = Dialect> {
    prop_oneof![
        Just(Dialect::Swagger2),
        Just(Dialect::OpenApi30),
        Just(Dialect::OpenApi31)
    ]
}

/// Names as documents write them: ordinary identifiers, names that
/// collide, names with pointer and URI syntax, other scripts, emoji,
/// control characters and bidirectional marks, and anything at all.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-zA-Z_][a-zA-Z0-9_]{0,7}",
        2 => prop::sample::select(vec![
            "Pet", "pet", "User", "id", "name", "body", "body_id", "a/b", "~0", "a~1b", "x y",
            "%41", "%", "#", "$ref", "properties", "type", "..", "", " ", "ünïcødé", "名前",
            "😀", "\u{202e}rtl", "a\u{0}b", "tab\tname", "line\nbreak", "\"quoted\"", "-",
            "x-ext", "Ω", "ǅ", "\u{fffd}", "\u{10ffff}",
        ])
        .prop_map(str::to_string),
        1 => any::<String>().prop_map(|s| s.chars().take(6).collect()),
    ]
}

/// Regular expressions from several dialects and none: valid ECMA-262,
/// valid only without `u` (identity escapes), Java and POSIX classes,
/// lone surrogates, broken syntax, and random soups of metacharacters.
fn pattern() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => prop::sample::select(vec![
            "^[a-z]+$", "^\\d{3}-\\d{4}$", "\\p{Print}+", "\\p{L}+", "\\p{Lu}", "[[:alpha:]]+",
            "(unclosed", "a{2,1}", "^[A-Z]\\-\\d+$", "\\#x", "[\\uD800-\\uDFFF]", "\\uD83D",
            "(?<name>a)\\k<name>", "(?i)abc", "a++", "(?=a)b", "(?<=a)b", "\\1(a)", "[z-a]",
            "\\", "*", "x{99999999999}", "^(a+)+$", "\\cJ", "\\u{1F600}", "[\\w-.]", "\\Z",
            "\\A\\z", "(?P<x>y)", "[^]", "[]", "\\/", "🙂+", "\u{0}", "\\p{Script=Greek}",
        ])
        .prop_map(str::to_string),
        2 => "[a-z0-9\\\\^$.|?*+()\\[\\]{}pPdDwWsSuxk<>=!:,-]{0,12}",
        1 => any::<String>().prop_map(|s| s.chars().take(8).collect()),
    ]
}

fn format() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "int32", "int64", "float", "double", "byte", "binary", "date", "date-time",
            "password", "email", "uuid", "uri", "uri-reference", "hostname", "ipv4", "ipv6",
            "regex", "duration", "time", "json-pointer", "iri", "idn-email", "", "unknown-format",
            "DATE-TIME", "decimal",
        ])
        .prop_map(|s| json!(s)),
        1 => any::<String>().prop_map(|s| json!(s.chars().take(6).collect::<String>())),
        1 => Just(json!(7)),
    ]
}

/// Numbers at the edges of what JSON and `f64` hold.
fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        prop::sample::select(vec![
            0.0,
            -0.0,
            1e308,
            -1e308,
            5e-324,
            9007199254740993.0,
            1.5,
            -2.25,
            0.1,
        ])
        .prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |n| n.is_finite())
            .prop_map(|n| json!(n)),
    ]
}

/// Any JSON scalar, for `enum`, `const`, `default` and `example`.
fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        name().prop_map(Value::String),
    ]
}

/// A small JSON value, scalars in arrays and objects.
fn data() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(3, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(name(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The component names a document defines: every `$ref` is drawn from
/// these (so cycles are common) or from `MISSING` (dangling).
const COMPONENTS: [&str; 6] = ["Pet", "Node", "a/b", "ü~x", "Err or", "$ref"];
const MISSING: &str = "Missing";

/// A JSON pointer reference token.
fn token(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// A `$ref`: to a component, escaped as it should be or written raw, to a
/// component that does not exist, to another file, to the network (never
/// fetched), or malformed.
fn reference(dialect: Dialect) -> impl Strategy<Value = Value> {
    let base = if dialect == Dialect::Swagger2 {
        "#/definitions/"
    } else {
        "#/components/schemas/"
    };
    prop_oneof![
        6 => prop::sample::select(COMPONENTS.to_vec())
            .prop_map(move |n| format!("{base}{}", token(n))),
        1 => prop::sample::select(COMPONENTS.to_vec()).prop_map(move |n| format!("{base}{n}")),
        1 => Just(format!("{base}{MISSING}")),
        1 => prop::sample::select(vec![
            "other.json#/components/schemas/Pet",
            "../outside.json",
            "https://example.com/schema.json",
            "#",
            "#/paths",
            "#/components/schemas/Pet/properties/name",
            "",
            "#/%ZZ",
            "#/components/schemas/%50et",
        ])
        .prop_map(str::to_string),
    ]
    .prop_map(|r| json!({"$ref": r}))
}

/// A leaf schema: a typed scalar with some of its keywords, a reference,
/// a boolean schema or the empty one.
fn leaf(dialect: Dialect) -> impl Strategy<Value = Value> {
    let typed = (
        prop::sample::select(vec![
            "string", "integer", "number", "boolean", "null", "file", "any", "object", "array",
        ]),
        prop::option::of(pattern()),
        prop::option::of(format()),
        prop::option::of(prop::collection::vec(scalar(), 0..4)),
        prop::option::of(number()),
        prop::option::of(number()),
        prop::option::of(prop_oneof![number(), Just(json!("3"))]),
        prop::option::of(any::<bool>()),
        prop::option::of(scalar()),
        any::<u8>(),
    )
        .prop_map(
            move |(ty, pattern, format, values, low, high, length, flag, example, bits)| {
                let mut schema = Map::new();
                schema.insert("type".into(), json!(ty));
                if dialect == Dialect::OpenApi31 && bits & 1 == 1 {
                    schema.insert("type".into(), json!([ty, "null"]));
                }
                if let Some(p) = pattern {
                    schema.insert("pattern".into(), json!(p));
                }
                if let Some(f) = format {
                    schema.insert("format".into(), f);
                }
                if let Some(v) = values {
                    schema.insert("enum".into(), Value::Array(v));
                }
                if let Some(n) = low {
                    schema.insert("minimum".into(), n);
                }
                if let Some(n) = high {
                    let key = if bits & 2 == 2 {
                        "exclusiveMaximum"
                    } else {
                        "maximum"
                    };
                    schema.insert(key.into(), n);
                }
                if let Some(n) = length {
                    let key = ["minLength", "maxLength", "minItems", "multipleOf"]
                        [usize::from(bits >> 6)];
                    schema.insert(key.into(), n);
                }
                if let Some(flag) = flag {
                    let key = [
                        "nullable",
                        "readOnly",
                        "writeOnly",
                        "deprecated",
                        "exclusiveMinimum",
                        "x-nullable",
                        "uniqueItems",
                        "nullable",
                    ][usize::from((bits >> 2) & 7)];
                    schema.insert(key.into(), json!(flag));
                }
                if let Some(example) = example {
                    let key = if bits & 32 == 32 {
                        "example"
                    } else {
                        "default"
                    };
                    schema.insert(key.into(), example);
                }
                Value::Object(schema)
            },
        );
    prop_oneof![
        5 => typed,
        3 => reference(dialect),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => Just(json!({})),
        1 => data(),
    ]
}

/// A schema of any shape, up to a few levels deep.
fn schema(dialect: Dialect) -> impl Strategy<Value = Value> {
    leaf(dialect).prop_recursive(4, 40, 5, move |inner| {
        let composed = (
            prop::sample::select(vec!["allOf", "oneOf", "anyOf", "allOf"]),
            prop::collection::vec(inner.clone(), 0..4),
        )
            .prop_map(|(keyword, parts)| json!({(keyword): parts}));
        let object = (
            prop::collection::vec((name(), inner.clone()), 0..5),
            prop::collection::vec(name(), 0..3),
            prop::option::of(prop_oneof![
                any::<bool>().prop_map(Value::Bool),
                inner.clone()
            ]),
            any::<u8>(),
        )
            .prop_map(move |(properties, required, additional, bits)| {
                let mut schema = Map::new();
                if bits & 1 == 1 {
                    schema.insert("type".into(), json!("object"));
                }
                let names: Vec<String> = properties.iter().map(|(n, _)| n.clone()).collect();
                schema.insert(
                    "properties".into(),
                    Value::Object(properties.into_iter().collect()),
                );
                let mut required: Vec<Value> = required.into_iter().map(Value::String).collect();
                if bits & 2 == 2
                    && let Some(first) = names.first()
                {
                    required.push(json!(first));
                    required.push(json!(first));
                }
                if bits & 4 == 4 {
                    required.push(json!(7));
                }
                if !required.is_empty() {
                    schema.insert("required".into(), Value::Array(required));
                }
                if let Some(additional) = additional {
                    schema.insert("additionalProperties".into(), additional);
                }
                if bits & 8 == 8 {
                    schema.insert(
                        "discriminator".into(),
                        json!({"propertyName": names.first().cloned().unwrap_or_default()}),
                    );
                }
                if bits & 16 == 16 {
                    schema.insert("minProperties".into(), json!(1));
                }
                Value::Object(schema)
            });
        let array = (inner.clone(), any::<u8>()).prop_map(|(items, bits)| {
            let mut schema = json!({"type": "array", "items": items});
            if bits & 1 == 1 {
                schema["maxItems"] = json!(bits);
            }
            if bits & 2 == 2 {
                schema["uniqueItems"] = json!(true);
            }
            schema
        });
        let negated = inner.clone().prop_map(|s| json!({"not": s}));
        let modern = (
            prop::collection::vec(inner.clone(), 0..3),
            prop::collection::vec((pattern(), inner.clone()), 0..3),
            inner.clone(),
            inner.clone(),
            scalar(),
            any::<u8>(),
        )
            .prop_map(|(prefix, patterns, condition, then, constant, bits)| {
                let mut schema = Map::new();
                match bits % 5 {
                    0 => {
                        schema.insert("prefixItems".into(), Value::Array(prefix));
                    }
                    1 => {
                        schema.insert(
                            "patternProperties".into(),
                            Value::Object(patterns.into_iter().collect()),
                        );
                    }
                    2 => {
                        schema.insert("if".into(), condition);
                        schema.insert("then".into(), then);
                    }
                    3 => {
                        schema.insert("const".into(), constant);
                    }
                    _ => {
                        schema.insert("$defs".into(), json!({"inline": condition}));
                        schema.insert("items".into(), Value::Array(prefix));
                        schema.insert("unevaluatedProperties".into(), json!(false));
                        schema.insert("dependentRequired".into(), json!({"a": ["b"], "c": 5}));
                    }
                }
                Value::Object(schema)
            });
        prop_oneof![
            3 => composed,
            4 => object,
            2 => array,
            1 => negated,
            if dialect == Dialect::OpenApi31 { 2 } else { 1 } => modern,
        ]
    })
}

/// A path template: segments that are names or `{variables}`.
fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::collection::vec(
            prop_oneof![
                3 => "[a-z]{1,6}",
                2 => name().prop_map(|n| format!("{{{n}}}")),
                1 => name(),
            ],
            0..4,
        )
        .prop_map(|segments| format!("/{}", segments.join("/"))),
        1 => prop::sample::select(vec!["", "no-slash", "/{}", "/{a}/{a}", "//", "/a?b=c", "/a#b", "/%zz/{x"])
            .prop_map(str::to_string),
    ]
}

fn method() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "get",
        "put",
        "post",
        "delete",
        "patch",
        "head",
        "options",
        "trace",
        "x-other",
        "GET",
        "parameters",
    ])
}

/// A parameter in the dialect's shape.
fn parameter(dialect: Dialect) -> impl Strategy<Value = Value> {
    (
        name(),
        prop::sample::select(vec![
            "path", "query", "query", "header", "cookie", "formData", "body", "nowhere",
        ]),
        any::<bool>(),
        schema(dialect),
        prop::option::of(prop::sample::select(vec![
            "form",
            "simple",
            "label",
            "matrix",
            "deepObject",
            "spaceDelimited",
            "pipeDelimited",
            "csv",
            "multi",
            "bogus",
        ])),
        any::<u8>(),
    )
        .prop_map(move |(name, location, required, schema, style, bits)| {
            let mut param = json!({"name": name, "in": location, "required": required});
            if dialect == Dialect::Swagger2 && location != "body" {
                // Swagger 2.0 parameters carry their schema keywords inline.
                if let Value::Object(members) = &schema {
                    for (key, value) in members {
                        param[key.as_str()] = value.clone();
                    }
                }
                if bits & 1 == 1 {
                    param["type"] = json!("array");
                    param["items"] = json!({"type": "string"});
                }
                if let Some(style) = style {
                    param["collectionFormat"] = json!(style);
                }
                if bits & 2 == 2 {
                    param["type"] = json!("file");
                }
            } else if bits & 4 == 4 && dialect != Dialect::Swagger2 {
                param["content"] = json!({"application/json": {"schema": schema}});
            } else {
                param["schema"] = schema;
                if let Some(style) = style {
                    param["style"] = json!(style);
                    param["explode"] = json!(bits & 8 == 8);
                }
            }
            if bits & 16 == 16 {
                param["allowReserved"] = json!(true);
            }
            param
        })
}

fn media_type() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "application/json",
        "application/json",
        "application/x-www-form-urlencoded",
        "multipart/form-data",
        "text/plain",
        "application/octet-stream",
        "application/vnd.api+json",
        "*/*",
        "application/xml",
        "application/json; charset=utf-8",
        "bogus",
    ])
}

fn status_code() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "200", "200", "201", "202", "204", "default", "2XX", "404", "500", "299", "abc",
    ])
}

/// One operation: id, parameters, body (3.x) and responses.
fn operation(dialect: Dialect) -> impl Strategy<Value = Value> {
    (
        prop::option::of(name()),
        prop::collection::vec(parameter(dialect), 0..4),
        prop::option::of((media_type(), schema(dialect), any::<bool>())),
        prop::collection::vec((status_code(), media_type(), schema(dialect)), 0..3),
        prop::collection::vec(name(), 0..2),
        prop::option::of(name()),
        any::<u8>(),
    )
        .prop_map(
            move |(id, parameters, body, responses, tags, summary, bits)| {
                let mut op = Map::new();
                if let Some(id) = id {
                    op.insert("operationId".into(), json!(id));
                }
                if let Some(summary) = summary {
                    op.insert("summary".into(), json!(summary));
                }
                op.insert("tags".into(), json!(tags));
                let mut parameters = parameters;
                if bits & 1 == 1 {
                    parameters.push(json!({"$ref": "#/components/parameters/Shared"}));
                }
                op.insert("parameters".into(), Value::Array(parameters));
                if let Some((media, schema, required)) = body {
                    match dialect {
                        Dialect::Swagger2 => {
                            op.insert("consumes".into(), json!([media]));
                            let params = op["parameters"].as_array_mut().unwrap();
                            params.push(json!({"name": "payload", "in": "body", "required": required, "schema": schema}));
                        }
                        _ => {
                            op.insert(
                                "requestBody".into(),
                                json!({"required": required, "content": {(media): {"schema": schema}}}),
                            );
                        }
                    }
                }
                let mut answers = Map::new();
                for (code, media, schema) in responses {
                    let answer = match dialect {
                        Dialect::Swagger2 => json!({"description": "r", "schema": schema}),
                        _ => json!({"description": "r", "content": {(media): {"schema": schema}}}),
                    };
                    answers.insert(code.to_string(), answer);
                }
                op.insert("responses".into(), Value::Object(answers));
                if bits & 2 == 2 {
                    op.insert("security".into(), json!([{"key": []}, {"undefined": ["s"]}]));
                }
                if bits & 4 == 4 {
                    op.insert("deprecated".into(), json!(true));
                }
                Value::Object(op)
            },
        )
}

/// A whole document of `dialect`.
fn document() -> impl Strategy<Value = Value> {
    dialect().prop_flat_map(|dialect| {
        (
            prop::collection::vec(
                (path(), prop::collection::vec((method(), operation(dialect)), 1..3)),
                1..5,
            ),
            prop::collection::vec(
                (prop::sample::select(COMPONENTS.to_vec()), schema(dialect)),
                0..6,
            ),
            parameter(dialect),
            prop::option::of(prop::sample::select(vec![
                "https://api.example.com/v1",
                "http://{host}:{port}/base",
                "/relative",
                "",
                "not a url",
            ])),
        )
            .prop_map(move |(paths, components, shared, server)| {
                let mut path_items = Map::new();
                for (path, operations) in paths {
                    let item = path_items
                        .entry(path)
                        .or_insert_with(|| Value::Object(Map::new()));
                    for (method, operation) in operations {
                        item[method] = operation;
                    }
                }
                let schemas: Map<String, Value> = components
                    .into_iter()
                    .map(|(name, schema)| (name.to_string(), schema))
                    .collect();
                let info = json!({"title": "generated", "version": "1"});
                match dialect {
                    Dialect::Swagger2 => {
                        let mut doc = json!({
                            "swagger": "2.0",
                            "info": info,
                            "paths": path_items,
                            "definitions": schemas,
                            "parameters": {"Shared": shared},
                            "securityDefinitions": {"key": {"type": "apiKey", "name": "X-Key", "in": "header"}},
                        });
                        if let Some(server) = server {
                            doc["host"] = json!(server.trim_start_matches("https://"));
                            doc["basePath"] = json!("/v1");
                        }
                        doc
                    }
                    _ => {
                        let version = if dialect == Dialect::OpenApi30 {
                            "3.0.3"
                        } else {
                            "3.1.0"
                        };
                        let mut doc = json!({
                            "openapi": version,
                            "info": info,
                            "paths": path_items,
                            "components": {
                                "schemas": schemas,
                                "parameters": {"Shared": shared},
                                "securitySchemes": {"key": {"type": "apiKey", "name": "X-Key", "in": "header"}},
                            },
                        });
                        if let Some(server) = server {
                            doc["servers"] = json!([{"url": server, "variables": {"host": {"default": "h"}, "port": {"default": "1"}}}]);
                        }
                        doc
                    }
                }
            })
    })
}

// ------------------------------------------------------------ the checks

fn build(files: &[(&str, Vec<u8>)]) -> Catalog {
    let files = files
        .iter()
        .map(|(name, bytes)| (name.to_string(), bytes.clone()));
    Catalog::build(&Sources::from_files(files, None))
}

fn build_json(document: &Value) -> Catalog {
    build(&[("api.json", serde_json::to_vec(document).unwrap())])
}

/// Every tool's name and version, in name order.
fn versions(catalog: &Catalog) -> Vec<(String, String)> {
    let mut versions: Vec<(String, String)> = catalog
        .tools()
        .iter()
        .map(|tool| (tool.name.clone(), tool.version.clone()))
        .collect();
    versions.sort();
    versions
}

/// `value` with every object's keys in reverse order.
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

/// Keywords whose value is a schema, an array of schemas, or a map of
/// names to schemas (the 2020-12 applicators); everything else is data.
const SCHEMA_KEYWORDS: [&str; 11] = [
    "items",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];
const ARRAY_KEYWORDS: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];
const MAP_KEYWORDS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "dependentSchemas",
    "definitions",
];

/// Calls `visit(keyword, value, pointer)` for every keyword of every
/// schema in schema positions.
fn walk(schema: &Value, at: &str, visit: &mut dyn FnMut(&str, &Value, &str)) {
    let Value::Object(map) = schema else {
        return;
    };
    for (key, value) in map {
        let here = format!("{at}/{}", token(key));
        visit(key, value, &here);
        let key = key.as_str();
        if SCHEMA_KEYWORDS.contains(&key) {
            walk(value, &here, visit);
        } else if ARRAY_KEYWORDS.contains(&key) {
            for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                walk(item, &format!("{here}/{i}"), visit);
            }
        } else if MAP_KEYWORDS.contains(&key) {
            for (name, member) in value.as_object().into_iter().flatten() {
                walk(member, &format!("{here}/{}", token(name)), visit);
            }
        }
    }
}

/// `schema` with every `pattern` and `patternProperties` key in schema
/// positions replaced by a plain, distinct expression.
fn without_patterns(schema: &Value, counter: &mut usize) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        let k = key.as_str();
        let converted = if k == "pattern" && value.is_string() {
            json!("^p$")
        } else if k == "patternProperties" && value.is_object() {
            let mut members = Map::new();
            for (_, member) in value.as_object().into_iter().flatten() {
                *counter += 1;
                members.insert(format!("^p{counter}$"), without_patterns(member, counter));
            }
            Value::Object(members)
        } else if SCHEMA_KEYWORDS.contains(&k) {
            without_patterns(value, counter)
        } else if ARRAY_KEYWORDS.contains(&k) && value.is_array() {
            Value::Array(
                value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|item| without_patterns(item, counter))
                    .collect(),
            )
        } else if MAP_KEYWORDS.contains(&k) && value.is_object() {
            Value::Object(
                value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, member)| (name.clone(), without_patterns(member, counter)))
                    .collect(),
            )
        } else {
            value.clone()
        };
        out.insert(key.clone(), converted);
    }
    Value::Object(out)
}

/// What a strict 2020-12 client finds wrong with `schema`, one line each.
fn strict_problems(schema: &Value, input: bool) -> Vec<String> {
    let mut problems = Vec::new();
    if schema.get("type") != Some(&json!("object")) {
        problems.push(format!("root type {:?}", schema.get("type")));
    }
    if input && schema.get("additionalProperties") != Some(&json!(false)) {
        problems.push("root additionalProperties is not false".to_string());
    }
    if let Err(error) = jsonschema::draft202012::meta::validate(schema) {
        problems.push(format!(
            "not valid against the 2020-12 meta-schema at {}: {error}",
            error.instance_path()
        ));
    }
    // Patterns are checked as ECMA-262 below; `jsonschema` would read
    // them with its own engine (valid ECMA-262 such as `[^]` is not a Rust
    // regex), so it compiles the schema with each one replaced.
    if let Err(error) = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .should_ignore_unknown_formats(false)
        // 2020-12 formats this build of the validator has no IDNA tables for.
        .with_format("idn-email", |_: &str| true)
        .with_format("idn-hostname", |_: &str| true)
        .build(&without_patterns(schema, &mut 0))
    {
        problems.push(format!("does not compile as 2020-12: {error}"));
    }
    let defs = schema.get("$defs");
    walk(schema, "", &mut |key, value, at| match key {
        "pattern" => match value.as_str() {
            Some(pattern) => {
                if let Err(error) = regress::Regex::with_flags(pattern, "u") {
                    problems.push(format!(
                        "pattern {pattern:?} at {at} is not ECMA-262 with u: {error}"
                    ));
                }
            }
            None => problems.push(format!("pattern at {at} is not a string")),
        },
        "patternProperties" => {
            for pattern in value.as_object().into_iter().flatten().map(|(k, _)| k) {
                if let Err(error) = regress::Regex::with_flags(pattern, "u") {
                    problems.push(format!(
                        "patternProperties key {pattern:?} at {at} is not ECMA-262 with u: {error}"
                    ));
                }
            }
        }
        "$ref" => {
            let target = value
                .as_str()
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .filter(|name| !name.contains('/'))
                .map(|name| name.replace("~1", "/").replace("~0", "~"));
            let found = target.is_some_and(|name| defs.and_then(|d| d.get(&name)).is_some());
            if !found {
                problems.push(format!("$ref {value} at {at} is not one of its own $defs"));
            }
        }
        _ => {}
    });
    problems
}

/// Every schema of every tool of `catalog` compiles strictly.
fn assert_strict(catalog: &Catalog, document: &Value) -> Result<(), TestCaseError> {
    for tool in catalog.tools() {
        let definition = tool.definition();
        let mut problems = Vec::new();
        for (which, schema, input) in [
            ("published inputSchema", &definition["inputSchema"], true),
            ("full inputSchema", &tool.input_schema.to_value(), true),
        ] {
            for problem in strict_problems(schema, input) {
                problems.push(format!("{which}: {problem}\n  schema: {schema}"));
            }
        }
        if let Some(output) = definition.get("outputSchema") {
            for problem in strict_problems(output, false) {
                problems.push(format!("outputSchema: {problem}\n  schema: {output}"));
            }
        }
        prop_assert!(
            problems.is_empty(),
            "tool {}:\n{}\ndocument: {document}",
            tool.name,
            problems.join("\n")
        );
    }
    Ok(())
}

// ------------------------------------------------------------ properties

/// Never a panic, and every emitted schema compiles under a strict
/// 2020-12 validator with ECMA-262 patterns.
#[test]
fn every_generated_document_builds_into_schemas_a_strict_client_compiles() {
    check(
        "strict schemas",
        96,
        document(),
        |document| -> Result<(), TestCaseError> {
            let catalog = build_json(&document);
            assert_strict(&catalog, &document)
        },
    );
}

/// The same document, built again, with its keys in reverse order, as
/// YAML, or in another folder, gives the same names and versions (and the
/// same fingerprint when only the build or the key order differ). A
/// `$defs` name that is not a plain component name once carried a hash of
/// the file's path, so `api.json` and `api.yaml` of one document differed.
#[test]
fn versions_do_not_depend_on_the_build_or_on_key_order() {
    check(
        "deterministic versions",
        64,
        document(),
        |document| -> Result<(), TestCaseError> {
            let first = build_json(&document);
            let again = build_json(&document);
            let reordered = build_json(&reversed(&document));
            let expected = versions(&first);
            prop_assert_eq!(&versions(&again), &expected, "built twice");
            prop_assert_eq!(first.fingerprint(), again.fingerprint());
            prop_assert_eq!(
                &versions(&reordered),
                &expected,
                "keys reversed: {}",
                document
            );
            prop_assert_eq!(first.fingerprint(), reordered.fingerprint());
            let yaml = serde_yaml_ng::to_string(&document).expect("YAML of a JSON value");
            let as_yaml = build(&[("api.yaml", yaml.into_bytes())]);
            prop_assert_eq!(&versions(&as_yaml), &expected, "as api.yaml");
            let moved = build(&[(
                "team/apis/api.json",
                serde_json::to_vec(&document).expect("JSON"),
            )]);
            prop_assert_eq!(&versions(&moved), &expected, "as team/apis/api.json");
            Ok(())
        },
    );
}

/// The generator is not vacuous: across a run it makes tools, `$ref`
/// cycles that build into `$defs`, and patterns the converter drops with
/// a warning (so the strict checks above meet what they are about).
/// Counted over a fixed seed's 200 documents, so the figures are the same
/// on every run (a random seed's counts vary around the bounds).
#[test]
fn the_generator_reaches_tools_defs_and_dropped_patterns() {
    let (mut runner, _) = seeded_runner(200, 0x5eed_0019);
    let strategy = document();
    let (mut tools, mut with_defs, mut dropped, mut kept_patterns) = (0, 0, 0, 0);
    for _ in 0..200 {
        let document = strategy
            .new_tree(&mut runner)
            .expect("a document")
            .current();
        let catalog = build_json(&document);
        tools += catalog.tools().len();
        with_defs += catalog
            .tools()
            .iter()
            .filter(|t| t.input_schema.to_value().get("$defs").is_some())
            .count();
        dropped += catalog
            .diagnostics
            .iter()
            .filter(|d| d.code == "invalid_pattern")
            .count();
        kept_patterns += catalog
            .tools()
            .iter()
            .filter(|t| {
                t.input_schema
                    .to_value()
                    .to_string()
                    .contains("\"pattern\"")
            })
            .count();
    }
    eprintln!(
        "200 documents: {tools} tools, {with_defs} with $defs, {dropped} patterns dropped, {kept_patterns} tools keep a pattern"
    );
    assert!(tools > 200, "{tools} tools");
    assert!(with_defs > 10, "{with_defs} tools with $defs");
    assert!(dropped > 20, "{dropped} patterns dropped");
    assert!(kept_patterns > 20, "{kept_patterns} tools keep a pattern");
}

/// The strict check is not vacuous: what a client would refuse, it
/// refuses.
#[test]
fn the_strict_check_refuses_what_clients_refuse() {
    let sound = json!({"type": "object", "additionalProperties": false, "properties": {
        "a": {"type": "string", "pattern": "^[a-z]+$"},
        "b": {"$ref": "#/$defs/B"}
    }, "$defs": {"B": {"type": "integer"}}});
    assert_eq!(strict_problems(&sound, true), Vec::<String>::new());
    for broken in [
        json!({"type": "object", "additionalProperties": false, "properties": {"a": {"pattern": "\\p{Print}+"}}}),
        json!({"type": "object", "additionalProperties": false, "patternProperties": {"[[:alpha:]]+": {}}}),
        json!({"type": "object", "additionalProperties": false, "properties": {"a": {"$ref": "#/$defs/Gone"}}}),
        json!({"type": "object", "additionalProperties": false, "properties": {"a": {"type": "file"}}}),
        json!({"type": "object", "additionalProperties": false, "properties": {"a": {"minLength": -1}}}),
        json!({"type": "object", "additionalProperties": false, "required": "a"}),
        json!({"type": "object"}),
    ] {
        assert!(!strict_problems(&broken, true).is_empty(), "{broken}");
    }
}

/// Found by the strict property: a tuple `items: []` (which documents
/// carry, and draft-04 validators ignore) became `prefixItems: []`, which
/// the 2020-12 meta-schema refuses, so strict clients refused the tool and
/// the gateway, unable to compile its inputSchema, validated none of its
/// calls. An empty tuple constrains nothing: it is left out.
#[test]
fn an_empty_tuple_of_items_is_left_out() {
    for version in ["3.0.3", "3.1.0"] {
        let document = json!({
            "openapi": version,
            "info": {"title": "t", "version": "1"},
            "paths": {"/things": {"post": {
                "operationId": "make",
                "requestBody": {"content": {"application/json": {"schema": {
                    "type": "object",
                    "properties": {"list": {"type": "array", "items": []}}
                }}}},
                "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": {
                    "type": "object", "properties": {"tuple": {"items": []}}
                }}}}}
            }}}
        });
        let catalog = build_json(&document);
        let tool = catalog.tool("make").expect("the tool");
        assert_eq!(
            tool.input_schema.to_value()["properties"]["list"],
            json!({"type": "array"}),
            "{version}"
        );
        assert_strict(&catalog, &document).unwrap();
    }
}

// ------------------------------------------- left-out members in required

/// A member's role, told by its name's prefix: `p_` plain, `ro_`
/// `readOnly` (left out of input), `wo_` `writeOnly` (left out of output).
const ROLES: [&str; 3] = ["p_", "ro_", "wo_"];

/// A document whose one operation sends and returns an object composed of
/// a base (members of every role, flagged on the member or on a `$ref`'d
/// definition) and an extension (`allOf`: an inline part with its own
/// members, or the base `$ref`'d beside its own `required`), nested at a
/// random depth under properties and items, with `required` lists naming
/// members of every role, in the base, the extension, and an inline part
/// nested in a part.
fn composition_document() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec((0usize..3, any::<bool>()), 1..6),
        prop::collection::vec(0usize..3, 0..4),
        prop::collection::vec(any::<u8>(), 1..6),
        prop::collection::vec(any::<u8>(), 0..3),
        0usize..4,
        any::<u8>(),
    )
        .prop_map(|(base, own, picks, base_picks, depth, bits)| {
            let flagged = |role: usize| match role {
                1 => json!({"type": "string", "readOnly": true}),
                2 => json!({"type": "string", "writeOnly": true}),
                _ => json!({"type": "string"}),
            };
            let by_ref = |role: usize| match role {
                1 => json!({"$ref": "#/components/schemas/RoStamp"}),
                2 => json!({"$ref": "#/components/schemas/WoSecret"}),
                _ => json!({"type": "string"}),
            };
            let base_names: Vec<String> = base
                .iter()
                .enumerate()
                .map(|(i, (role, _))| format!("{}b{i}", ROLES[*role]))
                .collect();
            let own_names: Vec<String> = own
                .iter()
                .enumerate()
                .map(|(i, role)| format!("{}e{i}", ROLES[*role]))
                .collect();
            let all: Vec<&String> = base_names.iter().chain(&own_names).collect();
            let pick = |bytes: &[u8]| -> Vec<Value> {
                bytes.iter().map(|b| json!(all[usize::from(*b) % all.len()])).collect()
            };
            let base_properties: Map<String, Value> = base
                .iter()
                .zip(&base_names)
                .map(|((role, via_ref), name)| {
                    (name.clone(), if *via_ref { by_ref(*role) } else { flagged(*role) })
                })
                .collect();
            let base_required: Vec<Value> = base_picks
                .iter()
                .map(|b| json!(base_names[usize::from(*b) % base_names.len()]))
                .collect();
            let mut base_schema = json!({"type": "object", "properties": base_properties});
            if !base_required.is_empty() {
                base_schema["required"] = Value::Array(base_required);
            }
            let own_properties: Map<String, Value> = own
                .iter()
                .zip(&own_names)
                .map(|(role, name)| (name.clone(), flagged(*role)))
                .collect();
            let base_ref = json!({"$ref": "#/components/schemas/Base"});
            let (first, rest) = picks.split_at(picks.len().div_ceil(2));
            let extension = match bits % 3 {
                // An inline part lists what the base defines.
                0 => json!({"allOf": [base_ref, {"type": "object", "properties": own_properties, "required": pick(first)}]}),
                // The composing object's own required, beside its parts.
                1 => json!({"type": "object", "properties": own_properties, "required": pick(first), "allOf": [base_ref]}),
                // A part nested in a part.
                _ => json!({"allOf": [base_ref, {"allOf": [{"properties": own_properties, "required": pick(first)}]}]}),
            };
            let extension = if rest.is_empty() {
                extension
            } else {
                json!({"allOf": [extension, {"required": pick(rest)}]})
            };
            let inline = bits & 8 == 8;
            let mut body = if inline {
                extension.clone()
            } else {
                json!({"$ref": "#/components/schemas/Extended"})
            };
            for level in 0..depth {
                body = if level % 2 == 0 {
                    json!({"type": "object", "properties": {"wrap": body}, "required": ["wrap"]})
                } else {
                    json!({"type": "array", "items": body})
                };
            }
            if body.get("type") == Some(&json!("array")) {
                body = json!({"type": "object", "properties": {"list": body}});
            }
            let content = |schema: &Value| json!({"application/json": {"schema": schema}});
            json!({
                "openapi": if bits & 16 == 16 { "3.1.0" } else { "3.0.3" },
                "info": {"title": "t", "version": "1"},
                "paths": {"/things": {"post": {
                    "operationId": "make",
                    "requestBody": {"required": true, "content": content(&body)},
                    "responses": {"200": {"description": "ok", "content": content(&body)}}
                }}},
                "components": {"schemas": {
                    "RoStamp": {"type": "string", "readOnly": true},
                    "WoSecret": {"type": "string", "writeOnly": true},
                    "Base": base_schema,
                    "Extended": extension,
                }}
            })
        })
}

/// The names every `required` of `schema` lists (its `$defs` included).
fn required_names(schema: &Value) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    walk(schema, "", &mut |key, value, _| {
        if key == "required" {
            names.extend(
                value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(str::to_string)),
            );
        }
    });
    names
}

/// A member left out for its direction (`readOnly` in input, `writeOnly`
/// in output) is required nowhere in that direction's schema, at any depth
/// and in any part of a composition; every other member listed as required
/// stays required somewhere.
#[test]
fn members_left_out_for_their_direction_are_required_nowhere() {
    let options = sezzlee_catalog::BuildOptions {
        output_depth: 64,
        ..sezzlee_catalog::BuildOptions::default()
    };
    check(
        "left-out members",
        64,
        composition_document(),
        |document| -> Result<(), TestCaseError> {
            let sources = Sources::from_files(
                [(
                    "api.json".to_string(),
                    serde_json::to_vec(&document).unwrap(),
                )],
                None,
            );
            let catalog = Catalog::build_with(&sources, &options);
            let tool = catalog
                .tool("make")
                .ok_or_else(|| TestCaseError::fail("no tool"))?;
            let listed = required_names(&document);
            let input = required_names(&tool.input_schema.to_value());
            let output = tool
                .output_schema
                .as_ref()
                .map(|s| required_names(&s.to_value()))
                .unwrap_or_default();
            for (direction, required, left_out, kept) in [
                ("input", &input, "ro_", "wo_"),
                ("output", &output, "wo_", "ro_"),
            ] {
                let wrong: Vec<&String> = required
                    .iter()
                    .filter(|n| n.starts_with(left_out))
                    .collect();
                prop_assert!(
                    wrong.is_empty(),
                    "{direction} still requires {wrong:?}\ndocument: {document}"
                );
                for name in listed
                    .iter()
                    .filter(|n| n.starts_with("p_") || n.starts_with(kept))
                {
                    prop_assert!(
                        required.contains(name),
                        "{direction} lost required {name}\ndocument: {document}"
                    );
                }
            }
            assert_strict(&catalog, &document)
        },
    );
}
