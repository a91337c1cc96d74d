//! Doubles as a person reads them. Rust's `{}` writes `1.7e308` as a 309-digit decimal; this
//! form keeps the shortest digits that parse back to the same value and switches to exponent
//! form where Python's `repr` does (at 1e16 and below 1e-4), as Katib's Python suggestion
//! services do; the exponent is written as Rust writes it (`1e-5`, `1e16`), not padded as
//! Python pads it (`1e-05`, `1e+16`). Machine formats (JSON) keep their own encoding.

use std::fmt;

/// `x` written shortly: `0.001`, `1.5`, `1.7e308`, `1e-7`, `NaN`, `inf`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Short(pub f64);

impl fmt::Display for Short {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let x = self.0;
        let a = x.abs();
        if x.is_finite() && a != 0.0 && !(1e-4..1e16).contains(&a) {
            write!(f, "{x:e}")
        } else {
            write!(f, "{x}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_are_short_and_round_trip() {
        let cases = [
            (1.7e308, "1.7e308"),
            (-1.7e308, "-1.7e308"),
            (f64::MAX, "1.7976931348623157e308"),
            (5e-324, "5e-324"),
            (1e-7, "1e-7"),
            (0.0001, "0.0001"),
            (0.00009, "9e-5"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.5, "1.5"),
            (3.0, "3"),
            (0.0, "0"),
            (-0.0, "-0"),
            (1e15, "1000000000000000"),
            (1e16, "1e16"),
            (f64::INFINITY, "inf"),
            (f64::NAN, "NaN"),
        ];
        for (x, want) in cases {
            let text = Short(x).to_string();
            assert_eq!(text, want, "{x:?}");
            if x.is_finite() {
                assert_eq!(
                    text.parse::<f64>().unwrap().to_bits(),
                    x.to_bits(),
                    "{text}"
                );
            }
        }
    }
}
