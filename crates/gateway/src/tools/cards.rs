//! Compact cards: what search_tools shows of a tool.
//!
//! A card is a name, a description cut to 160 characters on a word
//! boundary and a one-line rendering of the top-level arguments
//! (`item: string (required), quantity: integer`), so an agent can choose
//! between many tools without reading their schemas.

use serde_json::Value;
use sezzlee_catalog::{Schema, Tool};
use sezzlee_json::{Escaped, LiteralBuilder};

/// Longest card description, `…` included.
pub const DESCRIPTION_LIMIT: usize = 160;
/// Longest parameters line before the rest is summarised.
pub const PARAMETERS_LIMIT: usize = 200;

/// A tool's card, computed once per catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    pub description: String,
    pub parameters: String,
}

impl Card {
    pub fn of(tool: &Tool) -> Card {
        Card {
            description: cut_description(&tool.description, DESCRIPTION_LIMIT),
            parameters: parameters_line(&tool.input_schema.unpack(), PARAMETERS_LIMIT),
        }
    }

    /// The card as search_tools sends it, `{"name", "description",
    /// "parameters"}` serialised: done once per catalog, so a search page
    /// is assembled from ready text.
    pub fn json(&self, name: &str) -> Box<str> {
        let mut card = serde_json::Map::new();
        card.insert("name".to_string(), Value::from(name));
        card.insert(
            "description".to_string(),
            Value::from(self.description.as_str()),
        );
        card.insert(
            "parameters".to_string(),
            Value::from(self.parameters.as_str()),
        );
        Value::Object(card).to_string().into_boxed_str()
    }
}

/// A card's JSON ([`Card::json`]) escaped as the inside of a JSON string,
/// as it stands in a search page's text block: escaped once per catalog.
pub fn escaped_card(card_json: &str) -> Escaped {
    Escaped::of(card_json)
}

/// Appends an escaped card ([`escaped_card`]) to an escaped page, with
/// `"authUncertain": true` added when `uncertain`.
pub fn push_card(out: &mut LiteralBuilder, escaped_card: &Escaped, uncertain: bool) {
    if uncertain && out.push_escaped_prefix(escaped_card, '}') {
        out.push_text(",\"authUncertain\":true}");
    } else {
        out.push_escaped(escaped_card);
    }
}

/// Whitespace collapsed, then cut at a word boundary with `…` so the whole
/// is at most `limit` characters.
pub fn cut_description(text: &str, limit: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= limit {
        return collapsed;
    }
    let keep: String = collapsed.chars().take(limit.saturating_sub(1)).collect();
    let at_word = match keep.rfind(' ') {
        Some(space) if space > 0 => &keep[..space],
        _ => keep.as_str(),
    };
    format!("{}…", at_word.trim_end_matches([' ', ',', ';', ':']))
}

/// `item: string (required), quantity: integer`, cut with `, … (+N more)`
/// past `limit` characters.
pub fn parameters_line(schema: &Schema, limit: usize) -> String {
    let Some(properties) = schema.properties() else {
        return String::new();
    };
    let required = schema.required();
    let parts: Vec<String> = properties
        .iter()
        .map(|(name, member)| {
            let mut part = format!("{name}: {}", type_text(schema, member, 0));
            if required.contains(&name.as_str()) {
                part.push_str(" (required)");
            }
            part
        })
        .collect();
    let mut line = String::new();
    for (i, part) in parts.iter().enumerate() {
        let separator = if i == 0 { "" } else { ", " };
        if line.chars().count() + separator.len() + part.chars().count() > limit {
            let rest = parts.len() - i;
            if line.is_empty() {
                line.push_str(&format!("… (+{rest} more)"));
            } else {
                line.push_str(&format!(", … (+{rest} more)"));
            }
            return line;
        }
        line.push_str(separator);
        line.push_str(part);
    }
    line
}

/// The type of one member: `type` (unions joined by `|`), arrays as
/// `T[]`, `$ref`s looked up, composition unions joined.
fn type_text(schema: &Schema, member: &Value, depth: usize) -> String {
    if depth > 8 {
        return "any".to_string();
    }
    if let Some(name) = member
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        && let Some(def) = schema.def(name)
    {
        return type_text(schema, &def.value(), depth + 1);
    }
    let item = |types: &str| -> String {
        if types == "array" {
            let items = member
                .get("items")
                .map_or("any".to_string(), |i| type_text(schema, i, depth + 1));
            if items.contains('|') {
                format!("({items})[]")
            } else {
                format!("{items}[]")
            }
        } else {
            types.to_string()
        }
    };
    match member.get("type") {
        Some(Value::String(t)) => item(t),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .map(item)
            .collect::<Vec<_>>()
            .join("|"),
        _ => {
            for key in ["anyOf", "oneOf"] {
                if let Some(Value::Array(options)) = member.get(key) {
                    let mut seen: Vec<String> = Vec::new();
                    for option in options {
                        let t = type_text(schema, option, depth + 1);
                        if !seen.contains(&t) {
                            seen.push(t);
                        }
                    }
                    return seen.join("|");
                }
            }
            if let Some(Value::Array(parts)) = member.get("allOf")
                && let Some(first) = parts.first()
            {
                return type_text(schema, first, depth + 1);
            }
            if member.get("properties").is_some() {
                "object".to_string()
            } else {
                "any".to_string()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn card_json_is_the_card_serialised_and_the_flag_is_added_in_place() {
        let card = Card {
            description: "Say \"hi\" \u{2014} politely.".to_string(),
            parameters: "name: string (required)".to_string(),
        };
        let text = card.json("greet");
        let plain = json!({
            "name": "greet",
            "description": "Say \"hi\" \u{2014} politely.",
            "parameters": "name: string (required)"
        });
        assert_eq!(&*text, plain.to_string());
        // Pages are escaped text: a page holding the card reads back as it.
        let escaped = escaped_card(&text);
        let read_back = |page: LiteralBuilder| -> Value {
            serde_json::from_str(&page.finish().text()).unwrap()
        };
        let mut out = LiteralBuilder::with_capacity(0);
        push_card(&mut out, &escaped, false);
        assert_eq!(read_back(out), plain);
        let mut out = LiteralBuilder::with_capacity(0);
        push_card(&mut out, &escaped, true);
        let mut flagged = plain.clone();
        flagged["authUncertain"] = json!(true);
        let page = out.finish().text();
        assert_eq!(serde_json::from_str::<Value>(&page).unwrap(), flagged);
        assert_eq!(page, flagged.to_string());
    }

    fn schema(root: Value) -> Schema {
        Schema {
            root: root.as_object().unwrap().clone(),
            defs: Vec::new(),
        }
    }

    #[test]
    fn descriptions_are_cut_on_a_word_boundary() {
        let text = "word ".repeat(50);
        let cut = cut_description(&text, 160);
        assert!(cut.chars().count() <= 160);
        assert!(cut.ends_with("word…"), "{cut}");
        assert_eq!(
            cut_description("Short  text\nhere.", 160),
            "Short text here."
        );
        let long_word = "x".repeat(200);
        assert_eq!(cut_description(&long_word, 160).chars().count(), 160);
    }

    #[test]
    fn parameters_render_types_on_one_line() {
        let s = schema(json!({"type": "object", "properties": {
            "item": {"type": "string"}, "quantity": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "note": {"type": ["string", "null"]},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "free": {}
        }, "required": ["item"]}));
        assert_eq!(
            parameters_line(&s, 200),
            "item: string (required), quantity: integer, tags: string[], note: string|null, either: integer|string, free: any"
        );
    }

    #[test]
    fn long_parameter_lists_are_summarised() {
        let props: serde_json::Map<String, Value> = (0..40)
            .map(|i| (format!("argument_{i}"), json!({"type": "string"})))
            .collect();
        let line = parameters_line(&schema(json!({"type": "object", "properties": props})), 200);
        assert!(line.chars().count() <= 200 + 20, "{line}");
        assert!(line.ends_with("more)"), "{line}");
        let shown = line.matches(": string").count();
        assert!(line.contains(&format!("(+{} more)", 40 - shown)), "{line}");
    }
}
