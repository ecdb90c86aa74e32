//! Words: how text becomes the tokens and keywords that search compares.
//!
//! A keyword finds a token only if the query and the tool's text were split,
//! folded and reduced to singular form by exactly the same rules, so those
//! rules live here in one place, with the word tables they use (stopwords,
//! synonyms, irregular and invariant plurals), apart from any index or
//! score.

use std::collections::HashSet;

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// Keywords beyond this many distinct ones are ignored, which bounds the cost
/// of a query whatever its length.
pub const MAX_KEYWORDS: usize = 32;

/// Function words that say nothing about an operation, and the filler an
/// agent's sentence carries ("can you please…", "I need…", "for them").
/// Sorted.
pub(super) const STOPWORDS: &[&str] = &[
    "a", "about", "all", "an", "and", "any", "are", "as", "at", "be", "by", "can", "could", "do",
    "does", "for", "from", "he", "her", "him", "his", "how", "i", "im", "in", "into", "is", "it",
    "its", "just", "let", "me", "my", "need", "of", "on", "or", "our", "please", "she", "so",
    "some", "that", "the", "their", "them", "these", "they", "this", "those", "to", "us", "via",
    "want", "we", "what", "which", "with", "would", "you", "your",
];

/// Words that ask for the same thing, compared by singular form: per entry,
/// the words searched for, then other words that only ask for them. A
/// keyword in either list also matches the searched words other than
/// itself, weakly (a synonym match weighs less than a literal one, as the
/// query ranks it). The verb entries include the HTTP
/// methods, so, the route being searched, `remove` finds `DELETE /pets/{id}`.
pub(super) const SYNONYMS: &[(&[&str], &[&str])] = &[
    (
        &["get", "list"],
        &["read", "fetch", "retrieve", "show", "view", "find"],
    ),
    (
        &["post", "create", "add"],
        &["new", "register", "make", "insert"],
    ),
    (&["delete", "remove"], &["destroy", "erase", "unregister"]),
    (
        &["put", "patch", "update"],
        &["edit", "modify", "change", "replace"],
    ),
    // Abbreviations common in API names and paths.
    (&["administrator", "admin"], &[]),
    (&["application", "app"], &[]),
    (&["attribute", "attr"], &[]),
    (&["authentication", "auth"], &[]),
    (&["authorization", "auth"], &[]),
    (&["certificate", "cert"], &[]),
    (&["configuration", "config"], &[]),
    (&["database", "db"], &[]),
    (&["directory", "dir"], &[]),
    (&["document", "doc"], &[]),
    (&["environment", "env"], &[]),
    (&["image", "img"], &[]),
    (&["information", "info"], &[]),
    (&["message", "msg"], &[]),
    (&["organization", "org"], &[]),
    (&["parameter", "param"], &[]),
    (&["permission", "perm"], &[]),
    (&["preference", "pref"], &[]),
    (&["reference", "ref"], &[]),
    (&["repository", "repo"], &[]),
    (&["specification", "spec"], &[]),
    (&["statistic", "stat"], &[]),
];

/// Plurals that the suffix rules get wrong, with their singular.
const IRREGULAR: &[(&str, &str)] = &[
    ("analyses", "analysis"),
    ("children", "child"),
    ("criteria", "criterion"),
    ("indices", "index"),
    ("matrices", "matrix"),
    ("men", "man"),
    ("people", "person"),
    ("vertices", "vertex"),
    ("women", "woman"),
];

/// Singular words ending in `s` that the suffix rules would otherwise cut.
const INVARIANT: &[&str] = &[
    "alias", "always", "atlas", "bias", "canvas", "gas", "has", "news", "series", "species",
    "this", "was", "yes",
];

pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

/// NFKD, combining marks removed, lowercase. Also used for whole-tag
/// filtering.
pub fn fold(text: &str) -> String {
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    text.nfkd()
        .filter(|c| !is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        .filter(|c| !is_combining_mark(*c))
        .collect()
}

/// The query's folded keywords, in order, de-duplicated.
pub fn keywords(query: &str) -> Vec<String> {
    capped_keywords(query, usize::MAX)
}

/// The keywords a query is ranked by: [`keywords`], the first
/// [`MAX_KEYWORDS`] of them. Two queries with the same keywords rank alike.
pub fn query_keywords(query: &str) -> Vec<String> {
    capped_keywords(query, MAX_KEYWORDS)
}

/// At most `cap` distinct keywords of `query`, in order.
fn capped_keywords(query: &str, cap: usize) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for_each_token(query, |token| {
        if out.len() >= cap {
            return false;
        }
        if seen.insert(token.clone()) {
            out.push(token);
        }
        true
    });
    out
}

/// All folded tokens of `text`, in order, duplicates kept (what a
/// sentence encoder reads of a query).
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |token| {
        out.push(token);
        true
    });
    out
}

/// Splits `text` into folded tokens: on anything not a letter or digit, and
/// before an upper-case letter that follows a lower-case letter or a digit
/// (`orderId`, `v2Items`) or that starts a word after an acronym
/// (`HTTPResponse`). Letters and digits otherwise stay together (`oauth2`).
/// Stops when `emit` returns false.
fn for_each_token(text: &str, mut emit: impl FnMut(String) -> bool) {
    let chars: Vec<char> = if text.is_ascii() {
        text.chars().collect()
    } else {
        text.nfkd().filter(|c| !is_combining_mark(*c)).collect()
    };
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let breaks = !c.is_alphanumeric() || starts_camel_word(&chars, i);
        if breaks && !current.is_empty() && !emit(std::mem::take(&mut current)) {
            return;
        }
        if c.is_ascii_alphanumeric() {
            current.push(c.to_ascii_lowercase());
        } else if c.is_alphanumeric() {
            current.extend(c.to_lowercase().filter(|c| !is_combining_mark(*c)));
        }
    }
    if !current.is_empty() {
        emit(current);
    }
}

/// Whether `chars[i]` is an upper-case letter that begins a camelCase word.
fn starts_camel_word(chars: &[char], i: usize) -> bool {
    let c = chars[i];
    if !c.is_uppercase() || i == 0 {
        return false;
    }
    let prev = chars[i - 1];
    let next_is_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
    prev.is_lowercase() || prev.is_numeric() || (prev.is_uppercase() && next_is_lower)
}

/// The form a folded word is compared by for singular/plural matching.
///
/// Plural suffixes are removed: `ies`→`y` (`policies`), `sses`→`ss`
/// (`addresses`), `uses`→`us` (`statuses`), `ches`/`shes`/`xes`/`zzes`→ drop
/// `es` (`matches`, `boxes`), otherwise a final `s` is dropped unless the
/// word ends in `ss`, `us` or `is` (`orders`, but `status`, `analysis`).
/// [`IRREGULAR`] and [`INVARIANT`] cover common exceptions. So that both
/// spellings of a pair meet, the result then has `ie`→`y` (`cookie`, like
/// `cookies`→`cooky`), `che`→`ch` (`cache`, like `caches`) and `use`→`us`
/// (`pause`, like `pauses`). Words under three characters are left alone.
/// The result is a comparison key, not always an English word.
pub fn singular(word: &str) -> String {
    if let Some((_, one)) = IRREGULAR.iter().find(|(many, _)| *many == word) {
        return (*one).to_string();
    }
    if word.chars().count() < 3 || INVARIANT.contains(&word) {
        return word.to_string();
    }
    let base = strip_plural(word);
    normalize_ending(&base)
}

fn strip_plural(word: &str) -> String {
    if let Some(stem) = word.strip_suffix("es")
        && INVARIANT.contains(&stem)
    {
        return stem.to_string();
    }
    if let Some(stem) = word.strip_suffix("sses") {
        return format!("{stem}ss");
    }
    if let Some(stem) = word.strip_suffix("uses") {
        return format!("{stem}us");
    }
    if let Some(stem) = word.strip_suffix("ies")
        && stem.chars().count() >= 2
    {
        return format!("{stem}y");
    }
    for suffix in ["ches", "shes", "xes", "zzes"] {
        if word.ends_with(suffix) {
            return word[..word.len() - 2].to_string();
        }
    }
    let keeps_s = ["ss", "us", "is"].iter().any(|end| word.ends_with(end));
    match word.strip_suffix('s') {
        Some(stem) if !keeps_s => stem.to_string(),
        _ => word.to_string(),
    }
}

fn normalize_ending(word: &str) -> String {
    if word.chars().count() < 4 {
        return word.to_string();
    }
    for (end, replacement) in [("ie", "y"), ("che", "ch"), ("use", "us")] {
        if let Some(stem) = word.strip_suffix(end) {
            return format!("{stem}{replacement}");
        }
    }
    word.to_string()
}

/// Singular forms of the literal words of a route's path: not the method,
/// not `{parameters}`, not numbers or stopwords; each once.
pub(crate) fn route_words(route: &str) -> Vec<String> {
    let path = route.split_once(' ').map_or(route, |(_, path)| path);
    let mut literal = String::with_capacity(path.len());
    let mut depth = 0usize;
    for c in path.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            _ if depth == 0 => literal.push(c),
            _ => literal.push(' '),
        }
    }
    let mut words: Vec<String> = tokens(&literal)
        .into_iter()
        .filter(|t| !t.chars().all(|c| c.is_ascii_digit()) && !is_version(t) && !is_stopword(t))
        .map(|t| singular(&t))
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}

/// Whether a path word is an API version (`v1`, `v13`): it names no
/// resource, however few routes share it (APIs that version each endpoint
/// on its own have `/v6/deployments` beside `/v3/projects/{id}`).
fn is_version(word: &str) -> bool {
    word.strip_prefix('v')
        .is_some_and(|digits| !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::strings;

    #[test]
    fn splits_on_punctuation_case_and_underscores() {
        assert_eq!(
            keywords("listOpenOrders"),
            strings(&["list", "open", "orders"])
        );
        assert_eq!(
            keywords("list_open_orders"),
            strings(&["list", "open", "orders"])
        );
        assert_eq!(
            keywords("GET /orders/{orderId}"),
            strings(&["get", "orders", "order", "id"])
        );
        assert_eq!(
            keywords("getHTTPResponse"),
            strings(&["get", "http", "response"])
        );
        assert_eq!(keywords("a.b-c, d;e"), strings(&["a", "b", "c", "d", "e"]));
    }

    #[test]
    fn an_agents_filler_is_not_a_keyword() {
        let kept: Vec<String> = keywords("Can you please cancel his order for me, I need it gone")
            .into_iter()
            .filter(|word| !is_stopword(word))
            .collect();
        assert_eq!(kept, strings(&["cancel", "order", "gone"]));
        assert!(STOPWORDS.windows(2).all(|pair| pair[0] < pair[1]), "sorted");
    }

    #[test]
    fn keeps_digits_with_letters_and_splits_after_them() {
        assert_eq!(keywords("oauth2 token"), strings(&["oauth2", "token"]));
        assert_eq!(
            keywords("createCoreV1Namespace"),
            strings(&["create", "core", "v1", "namespace"])
        );
        assert_eq!(
            keywords("/2010-04-01/x"),
            strings(&["2010", "04", "01", "x"])
        );
    }

    #[test]
    fn folds_accents_case_and_compatibility_forms() {
        assert_eq!(fold("Crème Brûlée"), "creme brulee");
        assert_eq!(fold("ÉCOLE"), "ecole");
        assert_eq!(fold("ﬁle"), "file");
        assert_eq!(fold("İstanbul"), "istanbul");
        assert_eq!(fold(""), "");
        assert_eq!(keywords("Café_Menü"), strings(&["cafe", "menu"]));
    }

    #[test]
    fn duplicate_keywords_collapse_and_odd_input_is_safe() {
        assert_eq!(keywords("Order order ORDER"), strings(&["order"]));
        assert!(keywords("").is_empty());
        assert!(keywords("  --- !!! 🎉 ").is_empty());
        assert_eq!(keywords("注文 一覧"), strings(&["注文", "一覧"]));
        let many: String = (0..10_000).map(|i| format!("w{i} ")).collect();
        assert_eq!(keywords(&many).len(), 10_000);
        assert_eq!(capped_keywords(&many, MAX_KEYWORDS).len(), MAX_KEYWORDS);
    }

    #[test]
    fn singular_forms() {
        for (plural, single) in [
            ("policies", "policy"),
            ("opportunities", "opportunity"),
            ("addresses", "address"),
            ("boxes", "box"),
            ("matches", "match"),
            ("hashes", "hash"),
            ("orders", "order"),
            ("statuses", "status"),
            ("ids", "id"),
            ("people", "person"),
            ("aliases", "alias"),
        ] {
            assert_eq!(singular(plural), singular(single), "{plural} ~ {single}");
        }
        for word in ["status", "analysis", "access", "news", "os", "is"] {
            assert_eq!(singular(word), word);
        }
        assert_eq!(singular("cookies"), singular("cookie"));
        assert_eq!(singular("caches"), singular("cache"));
        assert_eq!(singular("pauses"), singular("pause"));
        assert_ne!(singular("stats"), singular("state"));
    }

    #[test]
    fn route_words_are_literal_path_words_in_singular_form() {
        assert_eq!(
            route_words("GET /v1/users/{user-id}/todoLists/{id}.json"),
            strings(&["json", "list", "todo", "user"])
        );
        assert_eq!(
            route_words("POST /2010-04-01/Accounts"),
            strings(&["account"])
        );
        assert!(route_words("GET /").is_empty());
        // Versions name no resource; words that merely start with v do.
        assert_eq!(
            route_words("GET /v13/deployments/{id}/v/vendors"),
            strings(&["deployment", "v", "vendor"])
        );
    }
}
