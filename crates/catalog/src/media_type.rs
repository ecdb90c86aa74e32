//! Media types as the catalog compares them: parameters dropped, case
//! folded. A leaf both the input schema (`input`) and the form encodings
//! (`form_encoding`) read, so neither reaches into the other.

/// A media type without its parameters, lower case
/// (`Multipart/Form-Data; boundary=x` → `multipart/form-data`).
pub fn base_media_type(media_type: &str) -> String {
    media_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// `application/json`, `*/json` and `*+json` (with parameters).
pub fn is_json_media_type(media_type: &str) -> bool {
    let base = base_media_type(media_type);
    base.ends_with("/json") || base.ends_with("+json")
}
