//! Reading Katib's string-typed numbers the same way in validation and in conversion, so that
//! whatever validation accepts, conversion can convert.

/// A finite number, surrounding whitespace ignored.
pub(crate) fn parse_f64(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// An integer; `"3.0"` counts because YAML writers and some clients emit integers that way.
pub(crate) fn parse_i64(text: &str) -> Option<i64> {
    let t = text.trim();
    if let Ok(v) = t.parse::<i64>() {
        return Some(v);
    }
    let f = parse_f64(t)?;
    // Beyond 2^53 an f64 no longer holds every integer, so "integral" would be meaningless.
    (f.fract() == 0.0 && f.abs() <= 9.0e15).then_some(f as i64)
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
