//! Curated variants: narrower tools published for one operation.
//!
//! A catalog owner can publish `list_open_orders` beside `list_orders`, with
//! `status` fixed to `open`: fixed and omitted arguments disappear from the
//! variant's inputSchema and fixed values are sent on invoke. Variants share
//! the operation's outputSchema and dispatch data.

use super::draft::{Draft, apply_annotations, extend_unique};
use super::naming;
use super::schema::Schema;
use super::sidecar::{Sidecar, VariantConfig};
use serde_json::Value;
use std::collections::BTreeSet;

/// The draft of one variant of `base`, or why the variant is refused.
pub fn variant(
    sidecar: Option<&Sidecar>,
    base: &Draft,
    config: &VariantConfig,
) -> Result<Draft, String> {
    if !naming::is_valid_name(&config.name) {
        return Err(format!(
            "variant name '{}' is not a valid tool name ([a-z0-9_], 1-128 characters)",
            config.name
        ));
    }
    let known = base.input_schema.properties();
    let removed: Vec<&String> = config.fixed.keys().chain(config.omit.iter()).collect();
    for name in &removed {
        if !known.is_some_and(|props| props.contains_key(name.as_str())) {
            return Err(format!(
                "variant '{}' fixes or omits '{name}', which is not an argument of {}",
                config.name, base.route
            ));
        }
    }
    let mut annotations = base.annotations.clone().unwrap_or_default();
    if let Some(overrides) = &config.annotations {
        apply_annotations(&mut annotations, overrides);
    }
    let mut tags = base.tags.clone();
    extend_unique(&mut tags, config.tags.clone());
    let mut search_terms = base.search_terms.clone();
    extend_unique(&mut search_terms, config.search_terms.clone());
    let policy = match &config.visibility {
        Some(name) => sidecar.and_then(|s| s.policies.get(name)).cloned(),
        None => base.policy.clone(),
    };
    Ok(Draft {
        name: config.name.clone(),
        derived_name: false,
        description: config
            .description
            .clone()
            .unwrap_or_else(|| base.description.clone()),
        input_schema: without_members(&base.input_schema, &removed),
        published_input: None,
        output_schema: base.output_schema.clone(),
        compaction: Default::default(),
        size_besides_name: 0,
        annotations: (!annotations.is_empty()).then_some(annotations),
        tags,
        search_terms,
        route: base.route.clone(),
        pointer: base.pointer.clone(),
        revision: base.revision,
        policy,
        target: base.target.clone(),
        fixed: config.fixed.clone(),
    })
}

/// The schema without some top-level members, keeping only the
/// definitions still reachable.
fn without_members(schema: &Schema, removed: &[&String]) -> Schema {
    let mut root = schema.root.clone();
    if let Some(Value::Object(props)) = root.get_mut("properties") {
        props.retain(|name, _| !removed.contains(&name));
    }
    if let Some(Value::Array(required)) = root.get_mut("required") {
        required.retain(|name| !removed.iter().any(|r| Some(r.as_str()) == name.as_str()));
        if required.is_empty() {
            root.remove("required");
        }
    }
    let mut reachable = BTreeSet::new();
    let mut stack = Vec::new();
    collect_def_refs(&Value::Object(root.clone()), &mut stack);
    while let Some(name) = stack.pop() {
        if !reachable.insert(name.clone()) {
            continue;
        }
        if let Some(def) = schema.def(&name) {
            collect_def_refs(&def.value(), &mut stack);
        }
    }
    Schema {
        root,
        defs: schema
            .defs
            .iter()
            .filter(|def| reachable.contains(&def.name))
            .cloned()
            .collect(),
    }
}

fn collect_def_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(name) = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
            {
                out.push(name.to_string());
            }
            map.values().for_each(|v| collect_def_refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_def_refs(v, out)),
        _ => {}
    }
}
