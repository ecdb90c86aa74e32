//! Compaction rules on small documents: what each depth keeps, what a stub
//! says, that a stub never refuses what the full schema accepts, and the
//! order in which the ladder gives detail up.

use super::fit::{Compaction, Fixed, fit};
use super::*;
use crate::refs::Resolver;
use crate::schema::{Converter, Dialect, Reached};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// `root` converted in `direction`, in a document whose component schemas
/// are `components`.
fn schema_of(components: Value, root: Value, direction: Direction) -> Schema {
    let document = json!({"openapi": "3.1.0", "components": {"schemas": components}});
    let mut files = BTreeMap::new();
    files.insert(Arc::<str>::from("api.json"), Arc::new(document));
    let resolver = Resolver::new(&files);
    let file: Arc<str> = Arc::from("api.json");
    let mut converter = Converter::new(&resolver, file.clone(), Dialect::OpenApi31);
    let mut reached = Reached::new();
    let converted = converter
        .convert(&file, &root, direction, &mut reached)
        .unwrap();
    let Value::Object(root) = converted else {
        panic!("not an object: {converted}")
    };
    converter.finish(root, reached, direction).unwrap()
}

fn compacted(schema: &Schema, depth: u32, direction: Direction) -> Value {
    Compactor::default()
        .compact(schema, Cut::depth(depth), direction)
        .schema
        .to_value()
}

/// A response whose `a` holds `A`, which holds `B` twice (a member and
/// array items), which holds two more levels of inline objects.
fn nested_output() -> Schema {
    schema_of(
        json!({
            "A": {"type": "object", "properties": {
                "b": {"$ref": "#/components/schemas/B"},
                "list": {"type": "array", "items": {"$ref": "#/components/schemas/B"}},
                "tags": {"type": "array", "items": {"type": "string"}}
            }},
            "B": {"type": "object", "description": "A bee.", "properties": {
                "name": {"type": "string", "enum": ["x", "y"]},
                "c": {"type": "object", "description": "Deeper.", "properties": {
                    "d": {"type": "object", "properties": {"e": {"type": "string"}}}
                }}
            }}
        }),
        json!({"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"}}}),
        Direction::Output,
    )
}

#[test]
fn levels_count_members_not_references_items_or_alternatives() {
    let schema = nested_output();
    // Depth 2: `a` (1) → A; `b` and the items of `list` (2) → B; B's members
    // (3) keep scalars and stub what opens another level.
    let two = compacted(&schema, 2, Direction::Output);
    assert_eq!(
        two["$defs"]["B"]["properties"]["c"],
        json!({"type": "object", "description": "Deeper. [Not expanded here: a nested schema.]"})
    );
    assert_eq!(
        two["$defs"]["B"]["properties"]["name"],
        json!({"type": "string", "enum": ["x", "y"]})
    );
    assert_eq!(two["$defs"]["A"], *schema.def("A").unwrap().value());
    // Depth 1: A is kept; B, reached only below the depth, is published
    // once as a stub definition that its references share.
    let one = compacted(&schema, 1, Direction::Output);
    assert_eq!(
        one["$defs"]["A"]["properties"]["b"],
        json!({"$ref": "#/$defs/B"})
    );
    assert_eq!(
        one["$defs"]["B"],
        json!({"type": "object", "description": "A bee. [Not expanded here: schema `B`.]"})
    );
    assert_eq!(
        one["$defs"]["A"]["properties"]["list"],
        json!({"type": "array", "description": "[Not expanded here: schema `B`.]"})
    );
    assert_eq!(
        one["$defs"]["A"]["properties"]["tags"],
        json!({"type": "array", "items": {"type": "string"}}),
        "an array of scalars opens no level"
    );
    // Depth 0: only the response's own members.
    let zero = compacted(&schema, 0, Direction::Output);
    assert_eq!(
        zero,
        json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/A"}},
            "$defs": {"A": {"type": "object", "description": "[Not expanded here: schema `A`.]"}}
        })
    );
}

#[test]
fn a_definition_expanded_anywhere_serves_its_deeper_references_too() {
    // `shallow` reaches C at level 1 (expanded), `deep` at level 3.
    let schema = schema_of(
        json!({"C": {"type": "object", "properties": {"x": {"type": "string"}, "inner": {"type": "object", "properties": {"y": {"type": "string"}}}}}}),
        json!({"type": "object", "properties": {
            "shallow": {"$ref": "#/components/schemas/C"},
            "deep": {"type": "object", "properties": {"more": {"type": "object", "properties": {
                "c": {"$ref": "#/components/schemas/C"}
            }}}}
        }}),
        Direction::Output,
    );
    let published = compacted(&schema, 2, Direction::Output);
    assert_eq!(
        published["properties"]["deep"]["properties"]["more"]["properties"]["c"],
        json!({"$ref": "#/$defs/C"}),
        "below the depth, the reference stays"
    );
    assert_eq!(
        published["$defs"]["C"],
        *schema.def("C").unwrap().value(),
        "and points at the expanded C, not a stub"
    );
}

#[test]
fn nothing_left_out_gives_back_the_same_schema_and_its_shared_definitions() {
    let schema = nested_output();
    let mut compactor = Compactor::default();
    // `d`, the deepest object, sits at level 4.
    let kept = compactor.compact(&schema, Cut::depth(4), Direction::Output);
    assert!(
        compactor
            .compact(&schema, Cut::depth(3), Direction::Output)
            .elided
    );
    assert!(!kept.elided);
    assert_eq!(kept.schema.to_value(), schema.to_value());
    assert!(
        kept.schema
            .defs
            .iter()
            .zip(&schema.defs)
            .all(|(a, b)| Arc::ptr_eq(a, b))
    );
    let full = compactor.compact(&schema, Cut::depth(FULL), Direction::Output);
    assert!(!full.elided);
    // Rendered definitions are shared between the schemas that reach them.
    let other = schema_of(
        json!({"A": {"type": "object", "properties": {"deep": {"type": "object", "properties": {"x": {"type": "object", "properties": {}}}}}}}),
        json!({"type": "object", "properties": {"first": {"$ref": "#/components/schemas/A"}, "second": {"$ref": "#/components/schemas/A"}}}),
        Direction::Output,
    );
    let one = compactor.compact(&other, Cut::depth(1), Direction::Output);
    let again = compactor.compact(&other, Cut::depth(1), Direction::Output);
    assert_eq!(one.schema.defs.len(), 1, "A once, however often it is used");
    assert!(Arc::ptr_eq(&one.schema.defs[0], &again.schema.defs[0]));
}

#[test]
fn input_never_elides_the_top_level_or_required_members() {
    let schema = schema_of(
        json!({"Order": {"type": "object", "required": ["must"], "properties": {
            "must": {"type": "object", "properties": {
                "x": {"type": "object", "properties": {"y": {"type": "string"}}}
            }},
            "may": {"type": "object", "properties": {"z": {"type": "string"}}}
        }}}),
        json!({"type": "object", "required": ["body"], "properties": {
            "body": {"$ref": "#/components/schemas/Order"},
            "note": {"type": "object", "properties": {"text": {"type": "string"}}}
        }}),
        Direction::Input,
    );
    let zero = compacted(&schema, 0, Direction::Input);
    let stub = |what: &str| json!({"type": "object", "description": format!("[Not expanded here: {what}. Accepted as given; checked when the call is made.]")});
    assert_eq!(zero["properties"]["body"], json!({"$ref": "#/$defs/Order"}));
    assert_eq!(zero["properties"]["note"], stub("a nested schema"));
    let order = &zero["$defs"]["Order"]["properties"];
    assert_eq!(order["may"], stub("a nested schema"));
    assert_eq!(order["must"]["properties"]["x"], stub("a nested schema"));
    assert_eq!(zero["required"], json!(["body"]));
}

#[test]
fn a_stub_names_what_it_replaces_through_nullable_alternatives() {
    let schema = schema_of(
        json!({"Customer": {"type": "object", "properties": {"id": {"type": "string"}}}}),
        json!({"type": "object", "properties": {"owner": {"type": "object", "properties": {
            "customer": {"anyOf": [
                {"anyOf": [{"type": "string"}, {"$ref": "#/components/schemas/Customer"}],
                 "description": "The customer, or its ID."},
                {"type": "null"}
            ]}
        }}}}),
        Direction::Output,
    );
    let one = compacted(&schema, 1, Direction::Output);
    assert_eq!(
        one["properties"]["owner"]["properties"]["customer"],
        json!({"description": "The customer, or its ID. [Not expanded here: schema `Customer`.]"})
    );
}

/// Every instance the full schema accepts, the compacted one accepts, at
/// every depth.
#[test]
fn a_compacted_schema_accepts_everything_the_full_one_accepts() {
    let schema = nested_output();
    let full = jsonschema::validator_for(&schema.to_value()).unwrap();
    let instances = [
        json!({}),
        json!({"a": {"b": {"name": "x", "c": {"d": {"e": "deep"}}}}}),
        json!({"a": {"list": [{"name": "y"}, {"c": {}}], "tags": ["t"]}}),
    ];
    for depth in 0..4 {
        let published = compacted(&schema, depth, Direction::Output);
        let relaxed = jsonschema::validator_for(&published).unwrap();
        for instance in &instances {
            assert!(full.is_valid(instance), "{instance}");
            assert!(relaxed.is_valid(instance), "depth {depth}: {instance}");
        }
    }
}

/// Two alternatives that differ only below the depth are both stubs
/// there, so both accept a value only one of the full ones accepts:
/// `oneOf` would refuse it, and a compacted schema publishes `anyOf`
/// instead. A `oneOf` a cut cannot touch (scalars) stays, and so does
/// every `oneOf` of a schema nothing was left out of.
#[test]
fn a_one_of_whose_alternatives_a_cut_relaxes_is_published_as_any_of() {
    let shape = |kind: &str| {
        json!({"type": "object", "required": ["inner"], "properties": {
            "inner": {"type": "object", "properties": {"x": {"type": kind}}}
        }})
    };
    let schema = schema_of(
        json!({"Text": shape("string"), "Count": shape("integer")}),
        json!({"type": "object", "properties": {
            "value": {"oneOf": [
                {"$ref": "#/components/schemas/Text"},
                {"$ref": "#/components/schemas/Count"}
            ]},
            "id": {"oneOf": [{"type": "string"}, {"type": "integer"}]}
        }}),
        Direction::Output,
    );
    let instance = json!({"value": {"inner": {"x": "text"}}, "id": 7});
    let full = jsonschema::validator_for(&schema.to_value()).unwrap();
    assert!(full.is_valid(&instance));
    let published = compacted(&schema, 1, Direction::Output);
    assert!(
        jsonschema::validator_for(&published)
            .unwrap()
            .is_valid(&instance),
        "{published}"
    );
    let value = &published["properties"]["value"];
    assert!(
        value.get("oneOf").is_none() && value["anyOf"].is_array(),
        "{value}"
    );
    assert!(
        published["properties"]["id"]["oneOf"].is_array(),
        "{published}"
    );
    let whole = compacted(&schema, 8, Direction::Output);
    assert!(whole["properties"]["value"]["oneOf"].is_array(), "{whole}");
    // Beside an `anyOf` of its own, the relaxed `oneOf` joins `allOf`.
    let both = schema_of(
        json!({"Text": shape("string"), "Count": shape("integer")}),
        json!({"type": "object", "properties": {"value": {
            "anyOf": [{"type": "object"}, {"type": "null"}],
            "oneOf": [
                {"$ref": "#/components/schemas/Text"},
                {"$ref": "#/components/schemas/Count"}
            ]
        }}}),
        Direction::Output,
    );
    let published = compacted(&both, 1, Direction::Output);
    let value = &published["properties"]["value"];
    assert_eq!(
        value["anyOf"],
        json!([{"type": "object"}, {"type": "null"}])
    );
    assert_eq!(
        value["allOf"][0]["anyOf"][0],
        json!({"$ref": "#/$defs/Text"}),
        "{value}"
    );
    assert!(
        jsonschema::validator_for(&published)
            .unwrap()
            .is_valid(&json!({"value": {"inner": {"x": "text"}}})),
        "{published}"
    );
}

#[test]
fn chars_counts_the_rendering_exactly() {
    let schema = schema_of(
        json!({"Ü": {"type": "object", "description": "naïve \"quoted\" — ok", "properties": {"x": {"type": "object", "properties": {"y": {"type": "string"}}}}}}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/components/schemas/Ü"}}}),
        Direction::Output,
    );
    for depth in [0, 1, FULL] {
        let published = Compactor::default()
            .compact(&schema, Cut::depth(depth), Direction::Output)
            .schema;
        assert_eq!(
            published.chars(),
            published.to_value().to_string().chars().count(),
            "depth {depth}"
        );
    }
    assert_eq!(Schema::default().chars(), 2);
}

/// The definition `fit` measured, rendered as load_tool renders it.
fn rendered(fixed: &Fixed, input: &Schema, output: Option<&Schema>) -> usize {
    let mut definition = serde_json::Map::new();
    definition.insert("name".into(), json!(fixed.name));
    definition.insert("description".into(), json!(fixed.description));
    definition.insert("inputSchema".into(), input.to_value());
    if let Some(output) = output {
        definition.insert("outputSchema".into(), output.to_value());
    }
    definition.insert("version".into(), json!("0123456789abcdef"));
    Value::Object(definition).to_string().chars().count()
}

#[test]
fn the_ladder_gives_up_output_depth_then_optional_input_then_the_last_level() {
    let output = Arc::new(nested_output());
    let input = schema_of(
        json!({"Big": {"type": "object", "properties": {
            "opt": {"type": "object", "properties": {"more": {"type": "object", "properties": {"x": {"type": "string", "description": "padding padding padding padding padding padding"}}}}}
        }}}),
        json!({"type": "object", "properties": {"body": {"$ref": "#/components/schemas/Big"}}}),
        Direction::Input,
    );
    let fixed = Fixed {
        name: "get_thing",
        description: "Gets the thing.",
        annotations: None,
    };
    let at = |target: usize| {
        fit(
            &mut Compactor::default(),
            &fixed,
            &input,
            Some(&output),
            2,
            target,
        )
    };
    // Room for everything: the output at its depth, the input whole.
    let roomy = at(usize::MAX);
    assert_eq!(
        roomy.compaction,
        Compaction {
            output_depth: Some(2),
            input_depth: None,
            text: None,
        }
    );
    assert!(roomy.input.is_none());
    assert_eq!(
        roomy.size,
        rendered(&fixed, &input, roomy.output.as_deref())
    );
    // Just too little: the output goes to depth 1 first.
    let smaller = at(roomy.size - 1);
    assert_eq!(smaller.compaction.output_depth, Some(1));
    assert_eq!(smaller.compaction.input_depth, None);
    // Less: the optional input is cut next, the output stays at 1.
    let less = at(smaller.size - 1);
    assert_eq!(less.compaction.output_depth, Some(1));
    assert!(less.compaction.input_depth.is_some());
    let published_input = less.input.as_ref().unwrap();
    assert_eq!(
        less.size,
        rendered(&fixed, published_input, less.output.as_deref())
    );
    // Nothing fits: the smallest rung (the first of equal size: trimming
    // text finds nothing long here), and its true size.
    let tiny = at(10);
    assert_eq!(
        tiny.compaction,
        Compaction {
            output_depth: Some(0),
            input_depth: Some(0),
            text: None,
        }
    );
    assert!(tiny.size > 10);
    assert_eq!(
        tiny.size,
        rendered(&fixed, tiny.input.as_ref().unwrap(), tiny.output.as_deref())
    );
}

#[test]
fn text_goes_last_examples_first_then_long_descriptions() {
    let long = "First sentence of a long description, which goes on. ".repeat(6);
    let schema = schema_of(
        json!({}),
        json!({"type": "object", "description": long, "properties": {
            "a": {"type": "string", "description": "short", "example": "x"}
        }}),
        Direction::Output,
    );
    let cut =
        |text| Compactor::default().compact(&schema, Cut { depth: 0, text }, Direction::Output);
    let whole = cut(Text::Whole);
    assert!(!whole.elided);
    let no_examples = cut(Text::NoExamples);
    assert!(no_examples.elided);
    assert_eq!(
        no_examples.schema.to_value()["properties"]["a"],
        json!({"type": "string", "description": "short"})
    );
    let short = cut(Text::Short).schema.to_value();
    assert_eq!(
        short["description"],
        "First sentence of a long description, which goes on."
    );
    assert_eq!(short["properties"]["a"]["description"], "short");
}

#[test]
fn the_last_text_rungs_leave_long_constraints_to_the_full_check_then_drop_descriptions() {
    let fonts: Vec<String> = (0..60).map(|i| format!("font{i}")).collect();
    let pattern = format!("^({})$", fonts.join("|"));
    let schema = schema_of(
        json!({}),
        json!({"type": "object", "properties": {
            "font": {"type": "string", "enum": fonts, "description": "The font."},
            "code": {"type": "string", "pattern": pattern, "description": ""}
        }}),
        Direction::Input,
    );
    let cut = |text| {
        Compactor::default()
            .compact(&schema, Cut { depth: 0, text }, Direction::Input)
            .schema
            .to_value()
    };
    let short = cut(Text::Short);
    assert_eq!(
        short["properties"]["font"],
        json!({"type": "string", "description": "The font. [One of 60 values, e.g. \"font0\", \"font1\", \"font2\", \"font3\", \"font4\", …; checked when the call is made.]"})
    );
    assert_eq!(short["properties"]["code"], json!({"type": "string"}));
    let bare = cut(Text::Bare);
    assert_eq!(
        bare["properties"]["font"],
        json!({"type": "string", "description": "[One of 60 values, e.g. \"font0\", \"font1\", \"font2\", \"font3\", \"font4\", …; checked when the call is made.]"})
    );
    // Still a relaxation: what the full schema accepts, both accept.
    let full = jsonschema::validator_for(&schema.to_value()).unwrap();
    for published in [&short, &bare] {
        let relaxed = jsonschema::validator_for(published).unwrap();
        let value = json!({"font": "font42", "code": "font7"});
        assert!(full.is_valid(&value) && relaxed.is_valid(&value));
    }
}
