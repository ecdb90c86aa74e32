//! Shaping a backend's JSON body that does not fit the response budget:
//! the body cut down, deterministically, until it fits a given room, with
//! every cut listed by JSON pointer, so an agent reads a usable part of a
//! large list instead of nothing.
//!
//! The rule (the contract's §3.3 writes it down for users):
//! - a value that fits its room is kept whole;
//! - an object keeps every member name; its members share the room, the
//!   smallest first: each member that fits an equal share of what is left
//!   is kept whole (identifiers, names, flags, small counts), and the
//!   larger ones share the rest equally, each shaped into its share;
//! - an array keeps its first items that fit whole, in order, never half
//!   an item; when not even the first item fits whole, that one item is
//!   shaped into the room (so the agent still sees the items' shape);
//! - a string is cut on a character boundary;
//! - an object whose member names alone do not fit its room is
//!   summarised: it becomes `{}` and its cut names its members and sizes.
//!
//! Sizes are characters of the compact serialisation (serde_json's), the
//! unit of the response budget. Pure: no I/O, no clock, no randomness.

use serde_json::{Map, Value, json};
use sezzlee_json::{escaped_chars, json_chars, literal_chars};
use std::collections::HashMap;

/// One cut, at a JSON pointer into the original body.
#[derive(Debug, Clone, PartialEq)]
pub enum Cut {
    /// An array kept its first `kept` items of `of`.
    Items { at: String, kept: usize, of: usize },
    /// A string kept its first `chars` characters of `of`.
    Chars { at: String, chars: usize, of: usize },
    /// An object left out whole, its members named with their sizes
    /// (the first [`SUMMARY_NAMES`] of them, in order).
    Summary {
        at: String,
        members: Vec<(String, usize)>,
        of: usize,
    },
}

impl Cut {
    /// The cut as the answer lists it.
    pub fn to_value(&self) -> Value {
        match self {
            Cut::Items { at, kept, of } => json!({"at": at, "kept": kept, "of": of}),
            Cut::Chars { at, chars, of } => json!({"at": at, "chars": chars, "of": of}),
            Cut::Summary { at, members, of } => {
                let named: Map<String, Value> = members
                    .iter()
                    .map(|(name, chars)| (name.clone(), json!(chars)))
                    .collect();
                json!({"at": at, "members": named, "of": of})
            }
        }
    }

    /// Where the cut is.
    pub fn at(&self) -> &str {
        match self {
            Cut::Items { at, .. } | Cut::Chars { at, .. } | Cut::Summary { at, .. } => at,
        }
    }
}

/// Most member names a summary lists.
pub const SUMMARY_NAMES: usize = 20;

/// Least room worth shaping one item into when no item fits whole.
const LEAST_ITEM_ROOM: usize = 64;

/// A body shaped to fit, and what was cut.
#[derive(Debug, Clone, PartialEq)]
pub struct Shaped {
    pub body: Value,
    pub cuts: Vec<Cut>,
}

/// Shapes `body` so that its compact serialisation takes at most `room`
/// characters (a string, array or object can always shrink to `""`, `[]`
/// or `{}`; only a bare number or literal larger than `room` is kept as it
/// is, so callers check the result's size).
pub fn shape(body: &Value, room: usize) -> Shaped {
    Shaper::default().shape(body, room)
}

/// Shapes one body, as often as its caller needs to find the room that
/// fits: the sizes of the body's containers are measured once, whatever
/// the number of rounds (keyed by address, so a shaper serves one body,
/// which must outlive it, and only nodes of that body are measured
/// through it).
#[derive(Default)]
pub struct Shaper {
    cuts: Vec<Cut>,
    sizes: HashMap<*const Value, usize>,
}

impl Shaper {
    /// `body` shaped into `room` characters (see [`shape`]).
    pub fn shape(&mut self, body: &Value, room: usize) -> Shaped {
        self.cuts.clear();
        let mut at = String::new();
        let body = self.value(body, room, &mut at);
        Shaped {
            body,
            cuts: std::mem::take(&mut self.cuts),
        }
    }

    /// Characters of `value` (a node of the shaper's body) serialised
    /// compactly.
    pub fn size(&mut self, value: &Value) -> usize {
        match value {
            Value::Array(items) => {
                if let Some(&size) = self.sizes.get(&(value as *const Value)) {
                    return size;
                }
                let mut size = 2 + items.len().saturating_sub(1);
                for item in items {
                    size += self.size(item);
                }
                self.sizes.insert(value as *const Value, size);
                size
            }
            Value::Object(members) => {
                if let Some(&size) = self.sizes.get(&(value as *const Value)) {
                    return size;
                }
                let mut size = 2 + members.len().saturating_sub(1);
                for (name, member) in members {
                    size += literal_chars(name) + 1 + self.size(member);
                }
                self.sizes.insert(value as *const Value, size);
                size
            }
            scalar => json_chars(scalar),
        }
    }

    /// `value` in at most `room` characters; `at` is its pointer (restored
    /// on return).
    fn value(&mut self, value: &Value, room: usize, at: &mut String) -> Value {
        if self.size(value) <= room {
            return value.clone();
        }
        match value {
            Value::String(text) => self.string(text, room, at),
            Value::Array(items) => self.array(items, room, at),
            Value::Object(members) => self.object(value, members, room, at),
            // A number or literal larger than its room: nothing smaller
            // says the same.
            scalar => scalar.clone(),
        }
    }

    fn string(&mut self, text: &str, room: usize, at: &str) -> Value {
        let mut used = 2;
        let mut end = 0;
        let mut kept = 0;
        for (index, c) in text.char_indices() {
            let cost = escaped_chars(c);
            if used + cost > room {
                break;
            }
            used += cost;
            end = index + c.len_utf8();
            kept += 1;
        }
        self.cuts.push(Cut::Chars {
            at: at.to_string(),
            chars: kept,
            of: text.chars().count(),
        });
        Value::String(text[..end].to_string())
    }

    fn array(&mut self, items: &[Value], room: usize, at: &mut String) -> Value {
        let mut kept = Vec::new();
        let mut used = 2;
        for item in items {
            let cost = self.size(item) + usize::from(!kept.is_empty());
            if used + cost > room {
                break;
            }
            used += cost;
            kept.push(item.clone());
        }
        if kept.is_empty()
            && let Some(first) = items.first()
            && room >= 2 + LEAST_ITEM_ROOM
        {
            let length = at.len();
            at.push_str("/0");
            kept.push(self.value(first, room - 2, at));
            at.truncate(length);
        }
        self.cuts.push(Cut::Items {
            at: at.to_string(),
            kept: kept.len(),
            of: items.len(),
        });
        Value::Array(kept)
    }

    fn object(
        &mut self,
        whole: &Value,
        members: &Map<String, Value>,
        room: usize,
        at: &mut String,
    ) -> Value {
        // Braces, commas, names and colons: what every member costs
        // before its value.
        let frame = 2
            + members.len().saturating_sub(1)
            + members
                .keys()
                .map(|name| literal_chars(name) + 1)
                .sum::<usize>();
        let sizes: Vec<usize> = members.values().map(|member| self.size(member)).collect();
        // Each value at its least: "", [], {}, or a scalar as it is.
        let least: usize = members.values().map(least_chars).sum();
        if frame + least > room {
            let whole_size = self.size(whole);
            self.cuts.push(Cut::Summary {
                at: at.to_string(),
                members: members
                    .keys()
                    .zip(&sizes)
                    .take(SUMMARY_NAMES)
                    .map(|(name, size)| (name.clone(), *size))
                    .collect(),
                of: whole_size,
            });
            return Value::Object(Map::new());
        }
        // The smallest first (ties in document order): whole while each
        // fits an equal share of what is left, then shaped into a share.
        let mut order: Vec<usize> = (0..members.len()).collect();
        order.sort_by_key(|&i| (sizes[i], i));
        let entries: Vec<(&String, &Value)> = members.iter().collect();
        let mut shaped: Vec<Option<Value>> = vec![None; members.len()];
        let mut left = room - frame;
        for (position, &i) in order.iter().enumerate() {
            let remaining = order.len() - position;
            let share = left / remaining;
            let (name, member) = entries[i];
            let (value, used) = if sizes[i] <= share {
                (member.clone(), sizes[i])
            } else {
                let length = at.len();
                push_pointer_segment(at, name);
                // Leave every later member at least its least form.
                let later_least: usize = order[position + 1..]
                    .iter()
                    .map(|&j| least_chars(entries[j].1))
                    .sum();
                let own_room = share
                    .max(least_chars(member))
                    .min(left.saturating_sub(later_least));
                let value = self.value(member, own_room, at);
                at.truncate(length);
                let used = json_chars(&value);
                (value, used)
            };
            left = left.saturating_sub(used);
            shaped[i] = Some(value);
        }
        let mut out = Map::new();
        for ((name, _), value) in entries.into_iter().zip(shaped) {
            out.insert(name.clone(), value.unwrap_or(Value::Null));
        }
        Value::Object(out)
    }
}

/// Characters of a value at its least: `""`, `[]`, `{}`, or a scalar.
fn least_chars(value: &Value) -> usize {
    match value {
        Value::String(_) | Value::Array(_) | Value::Object(_) => 2,
        scalar => json_chars(scalar),
    }
}

/// Appends `/name` to a JSON pointer (`~` as `~0`, `/` as `~1`).
fn push_pointer_segment(pointer: &mut String, name: &str) {
    pointer.push('/');
    for c in name.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serialised(value: &Value) -> usize {
        serde_json::to_string(value).unwrap().chars().count()
    }

    #[test]
    fn a_value_that_fits_is_whole_and_uncut() {
        let value = json!({"items": [1, 2, 3]});
        let shaped = shape(&value, 100);
        assert_eq!(shaped.body, value);
        assert!(shaped.cuts.is_empty());
    }

    #[test]
    fn an_array_of_objects_keeps_its_first_whole_items() {
        let items: Vec<Value> = (0..100)
            .map(|i| json!({"id": i, "name": format!("item {i}"), "description": "x".repeat(200)}))
            .collect();
        let value = json!({"items": items, "has_more": true});
        let shaped = shape(&value, 3_000);
        assert!(serialised(&shaped.body) <= 3_000);
        let kept = shaped.body["items"].as_array().unwrap();
        assert!(!kept.is_empty());
        assert_eq!(kept[0], items[0], "items are whole");
        assert_eq!(kept.last().unwrap(), &items[kept.len() - 1]);
        assert_eq!(shaped.body["has_more"], true);
        assert_eq!(
            shaped.cuts,
            vec![Cut::Items {
                at: "/items".into(),
                kept: kept.len(),
                of: 100
            }]
        );
    }

    #[test]
    fn a_long_multibyte_string_is_cut_on_a_character_boundary() {
        let text = "é€😀\"".repeat(1_000);
        let shaped = shape(&json!(text), 101);
        let kept = shaped.body.as_str().unwrap();
        assert!(text.starts_with(kept));
        assert!(serialised(&shaped.body) <= 101);
        assert_eq!(
            shaped.cuts,
            vec![Cut::Chars {
                at: String::new(),
                chars: kept.chars().count(),
                of: 4_000
            }]
        );
    }

    #[test]
    fn small_members_stay_whole_and_the_largest_shrinks() {
        let value = json!({
            "id": "cus_123", "object": "list", "url": "/v1/customers",
            "data": (0..500).map(|i| json!({"id": format!("cus_{i}")})).collect::<Vec<_>>(),
            "has_more": true
        });
        let shaped = shape(&value, 1_000);
        assert!(serialised(&shaped.body) <= 1_000);
        for member in ["id", "object", "url", "has_more"] {
            assert_eq!(shaped.body[member], value[member], "{member}");
        }
        assert_eq!(shaped.cuts.len(), 1);
        assert_eq!(shaped.cuts[0].at(), "/data");
    }

    #[test]
    fn an_object_too_large_for_its_names_is_summarised() {
        let members: Map<String, Value> = (0..50)
            .map(|i| (format!("member_number_{i}"), json!("v".repeat(100))))
            .collect();
        let value = json!({"outer": {"inner": members}});
        let shaped = shape(&value, 100);
        assert!(serialised(&shaped.body) <= 100);
        let Cut::Summary { at, members, of } = &shaped.cuts[0] else {
            panic!("{:?}", shaped.cuts);
        };
        assert_eq!(at, "/outer/inner");
        assert_eq!(members.len(), SUMMARY_NAMES);
        assert_eq!(members[0], ("member_number_0".to_string(), 102));
        assert_eq!(*of, serialised(&value["outer"]["inner"]));
    }

    #[test]
    fn a_single_huge_item_is_shaped_rather_than_dropped() {
        let value = json!([{"id": 1, "text": "y".repeat(10_000)}]);
        let shaped = shape(&value, 500);
        assert!(serialised(&shaped.body) <= 500);
        assert_eq!(shaped.body[0]["id"], 1);
        assert!(shaped.cuts.contains(&Cut::Items {
            at: String::new(),
            kept: 1,
            of: 1
        }));
        assert!(shaped.cuts.iter().any(|cut| cut.at() == "/0/text"));
    }

    #[test]
    fn huge_scalars_arrays_nested_arrays_nulls_and_empties_fit() {
        let cases = [
            json!((0..100_000).collect::<Vec<_>>()),
            json!([[1, 2, 3], (0..10_000).collect::<Vec<_>>(), [], {}, null]),
            json!({"a": null, "b": [], "c": {}, "d": "z".repeat(5_000)}),
            json!("q".repeat(100_000)),
        ];
        for case in cases {
            for room in [2, 10, 100, 1_000] {
                let shaped = shape(&case, room);
                assert!(
                    serialised(&shaped.body) <= room.max(least_chars(&case)),
                    "{room}"
                );
                assert_eq!(shape(&case, room), shaped, "deterministic");
            }
        }
    }

    #[test]
    fn pointers_escape_their_segments() {
        let value = json!({"a/b~c": "x".repeat(100), "k": 1});
        let shaped = shape(&value, 40);
        assert_eq!(shaped.cuts[0].at(), "/a~1b~0c");
    }
}
