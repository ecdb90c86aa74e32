//! The text that stands for a tool when it is embedded.
//!
//! What a tool does is said up front: its name as words and its summary,
//! the start of its description. Then which API it belongs to (so "in
//! Slack" can find Slack's tools in a merged catalog). Curated words
//! (`searchTerms`, `x-sezzlee-search-terms`, tags) come right after the
//! name: the operator put them there to be found. The description is cut
//! to its first [`DESCRIPTION_WORDS`] words and the route and argument
//! names are left out: on the tuning tasks the meaning ranking found no
//! more with them, and a shorter text is embedded nearly twice as fast
//! (the figures: `tests/data/README.md`, "Tuning record"). Markdown and
//! links are reduced to their words.

use sezzlee_catalog::Tool;

/// Characters of a tool's text; past them the encoder would cut anyway.
pub const MAX_TEXT_CHARS: usize = 700;

/// Words of the description embedded.
pub const DESCRIPTION_WORDS: usize = 40;

/// The text of `tool`, whose document's API is named `title`.
pub fn tool_text(tool: &Tool, title: Option<&str>) -> String {
    let mut text = String::with_capacity(384);
    text.push_str(&spaced(&tool.name));
    for term in tool.search_terms.iter().chain(&tool.tags) {
        text.push_str(", ");
        text.push_str(term);
    }
    if let Some(title) = title.map(str::trim).filter(|t| !t.is_empty()) {
        text.push_str(" (");
        text.push_str(title);
        text.push(')');
    }
    let description = plain(&tool.description);
    let words: Vec<&str> = description
        .split_whitespace()
        .take(DESCRIPTION_WORDS)
        .collect();
    if !words.is_empty() {
        text.push_str(": ");
        text.push_str(&words.join(" "));
    }
    cut(&text).to_string()
}

/// The first [`MAX_TEXT_CHARS`] characters of `text`.
fn cut(text: &str) -> &str {
    match text.char_indices().nth(MAX_TEXT_CHARS) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// A description's words: Markdown links as their text, HTML tags, code
/// marks and emphasis dropped, white space collapsed.
fn plain(description: &str) -> String {
    let mut out = String::with_capacity(description.len().min(MAX_TEXT_CHARS * 2));
    let mut in_tag = false;
    for c in description.chars() {
        if out.len() > MAX_TEXT_CHARS * 2 {
            break;
        }
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if in_tag => {}
            '`' | '*' | '_' | '#' | '[' | ']' | '|' => out.push(' '),
            c if c.is_whitespace() => out.push(' '),
            c => out.push(c),
        }
    }
    // Markdown link targets: "(https://…)" adds nothing to what it means.
    let mut words: Vec<&str> = Vec::new();
    for word in out.split_whitespace() {
        if word.starts_with("(http") || word.starts_with("http") {
            continue;
        }
        words.push(word);
    }
    words.join(" ")
}

/// `listOpenOrders`, `list_open_orders`, `/orders/{orderId}` as words
/// separated by spaces (`list Open Orders`, `orders order Id`): a model
/// knows words, not identifiers.
pub fn spaced(identifier: &str) -> String {
    let mut out = String::with_capacity(identifier.len() + 8);
    let mut previous: Option<char> = None;
    for c in identifier.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && previous.is_some_and(|p| p.is_lowercase()) {
                out.push(' ');
            }
            out.push(c);
        } else if !out.ends_with(' ') && !out.is_empty() {
            out.push(' ');
        }
        previous = Some(c);
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_become_words() {
        assert_eq!(spaced("listOpenOrders"), "list Open Orders");
        assert_eq!(spaced("/orders/{orderId}/cancel"), "orders order Id cancel");
        assert_eq!(spaced("create_refund"), "create refund");
    }

    #[test]
    fn descriptions_lose_markup_and_links() {
        assert_eq!(
            plain("Creates a <b>refund</b>. See [the docs](https://x.io/r) `now`"),
            "Creates a refund . See the docs now"
        );
    }
}
