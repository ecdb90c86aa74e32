//! What may stand in an HTTP header, decided once: sidecar validation at
//! load, header arguments at dispatch and configured headers after their
//! `${NAME}` expansion all apply the same rule, so no path can let a value
//! split a request.

/// Whether `name` is an HTTP field name (an RFC 9110 token).
pub fn is_field_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Whether `value` may be sent as a field value: no control characters
/// (CR, LF, NUL, …) other than horizontal tab.
pub fn is_field_value(value: &str) -> bool {
    !value.chars().any(|c| c.is_control() && c != '\t')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_tokens_and_values_hold_no_control_characters() {
        assert!(is_field_name("X-Api-Key"));
        assert!(!is_field_name("X Key"));
        assert!(!is_field_name("x-user:"));
        assert!(!is_field_name(""));
        assert!(is_field_value("Bearer abc\tdef"));
        assert!(!is_field_value("a\r\nX-Admin: 1"));
        assert!(!is_field_value("a\0b"));
    }
}
