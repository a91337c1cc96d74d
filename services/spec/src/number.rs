//! Reading Katib's string-typed numbers the same way in validation and in conversion, so that
//! whatever validation accepts, conversion can convert.

/// A finite number, surrounding whitespace ignored.
pub(crate) fn parse_f64(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// An integer; `"3.0"` counts (see [`vernier_core::integer_text`], which the gRPC API reads
/// with too).
pub(crate) fn parse_i64(text: &str) -> Option<i64> {
    vernier_core::integer_text(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_accept_integral_floats_only() {
        assert_eq!(parse_i64(" 3 "), Some(3));
        assert_eq!(parse_i64("3.0"), Some(3));
        assert_eq!(parse_i64("-2e1"), Some(-20));
        assert_eq!(parse_i64("3.5"), None);
        assert_eq!(parse_i64("abc"), None);
        assert_eq!(parse_f64("inf"), None);
        assert_eq!(parse_f64("1e-3"), Some(0.001));
    }
}
