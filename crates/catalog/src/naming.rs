//! Tool names: derived from the document, valid for MCP, unique, stable.
//!
//! Names are what agents type, so they are short snake_case words in
//! `[a-z0-9_]` (1–128 characters). Collisions are resolved deterministically
//! (documents in path order, operations in document order) so the same files
//! always give the same names.

use unicode_normalization::UnicodeNormalization;

/// Longest tool name we publish.
pub const MAX_NAME_LEN: usize = 128;

/// `createOrder` → `create_order`, `Orders-List` → `orders_list`,
/// `getHTTPResponse` → `get_http_response`. Accents are folded away; any
/// other character becomes a word break. Empty when nothing usable remains.
pub fn snake_case(text: &str) -> String {
    let chars: Vec<char> = text
        .nfkd()
        .filter(|c| !unicode_normalization::char::is_combining_mark(*c))
        .collect();
    let mut out = String::with_capacity(chars.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            push_break(&mut out);
            continue;
        }
        if c.is_ascii_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_is_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            let starts_word = prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_is_lower);
            if starts_word {
                push_break(&mut out);
            }
        }
        out.push(c.to_ascii_lowercase());
    }
    let trimmed = out.trim_matches('_');
    truncate_name(trimmed)
}

fn push_break(out: &mut String) {
    if !out.is_empty() && !out.ends_with('_') {
        out.push('_');
    }
}

/// Cuts a name to [`MAX_NAME_LEN`] without leaving a trailing `_`.
pub fn truncate_name(name: &str) -> String {
    if name.len() <= MAX_NAME_LEN {
        return name.to_string();
    }
    name[..MAX_NAME_LEN].trim_end_matches('_').to_string()
}

/// `GET /orders/{id}` → `get_orders_by_id`: the fallback when an operation
/// has no operationId.
pub fn from_route(method: &str, path: &str) -> String {
    let mut words = vec![method.to_ascii_lowercase()];
    for segment in path.split('/').filter(|s| !s.is_empty()) {
        if let Some(param) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            words.push("by".to_string());
            words.push(snake_case(param));
        } else {
            words.push(snake_case(segment));
        }
    }
    let joined = words
        .into_iter()
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("_");
    truncate_name(&joined)
}

/// Whether a name given explicitly (sidecar, `x-sezzlee-name`) is usable as is.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Appends `_N` to `base`, shortening the base so the result still fits.
pub fn with_suffix(base: &str, n: usize) -> String {
    let suffix = format!("_{n}");
    let keep = MAX_NAME_LEN.saturating_sub(suffix.len()).min(base.len());
    format!("{}{}", base[..keep].trim_end_matches('_'), suffix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_become_snake_case() {
        assert_eq!(snake_case("createOrder"), "create_order");
        assert_eq!(snake_case("Orders-List"), "orders_list");
        assert_eq!(snake_case("getHTTPResponse"), "get_http_response");
        assert_eq!(snake_case("pulls/list"), "pulls_list");
        assert_eq!(snake_case("print.ListPrinters"), "print_list_printers");
        assert_eq!(snake_case("  __weird--ID__ "), "weird_id");
        assert_eq!(snake_case("v2Items"), "v2_items");
        assert_eq!(snake_case("Crème brûlée"), "creme_brulee");
        assert_eq!(snake_case("注文"), "");
    }

    #[test]
    fn routes_become_names_when_there_is_no_operation_id() {
        assert_eq!(from_route("GET", "/orders/{id}"), "get_orders_by_id");
        assert_eq!(
            from_route("delete", "/users/{userId}/repos"),
            "delete_users_by_user_id_repos"
        );
        assert_eq!(from_route("GET", "/"), "get");
    }

    #[test]
    fn names_are_cut_to_the_limit() {
        let long = "a".repeat(300);
        assert_eq!(snake_case(&long).len(), MAX_NAME_LEN);
        let suffixed = with_suffix(&"b".repeat(128), 2);
        assert_eq!(suffixed.len(), MAX_NAME_LEN);
        assert!(suffixed.ends_with("_2"));
    }

    #[test]
    fn explicit_names_are_checked() {
        assert!(is_valid_name("list_open_orders"));
        assert!(!is_valid_name("List"));
        assert!(!is_valid_name(""));
        assert!(!is_valid_name("a-b"));
    }
}
