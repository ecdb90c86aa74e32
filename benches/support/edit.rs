//! The edit the reload measurements make: a new summary on a document's
//! first operation (shared by `benches/reload.rs` and
//! `examples/reload_steps.rs`).

use serde_json::{Value, json};

/// Sets the first operation's summary; `false` when the document has none.
pub fn edit_first_operation(document: &mut Value, summary: &str) -> bool {
    let Some(paths) = document.get_mut("paths").and_then(Value::as_object_mut) else {
        return false;
    };
    for item in paths.values_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for method in ["get", "put", "post", "delete", "patch", "head", "options"] {
            if let Some(Value::Object(operation)) = item.get_mut(method) {
                operation.insert("summary".to_string(), json!(summary));
                return true;
            }
        }
    }
    false
}
