//! Kubernetes resource quantities (`500m`, `2Gi`, `1e3`) read exactly, as `resource.Quantity`
//! holds them: compared exactly (a request of `700m` is not above a limit of `0.7`), rounded up
//! to whole units or millicores as the kubelet rounds them, and written in the canonical form
//! the API server checks a divisor against (`1000m` is `1`, `1024Ki` is `1Mi`). Written here
//! because no crate reads quantities without Kubernetes' client types; f64 arithmetic got
//! `700m > 0.7` and `2.14G` one byte too many.

/// How a quantity was written, which its canonical form keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A plain number or a decimal SI suffix (`m`, `k`, `M`, ...).
    Decimal,
    /// A binary SI suffix (`Ki`, `Mi`, ...).
    Binary,
    /// An exponent (`1e3`).
    Exponent,
}

/// A quantity as the exact fraction `num / den`.
#[derive(Debug, Clone, Copy)]
pub struct Quantity {
    num: i128,
    den: i128,
    pub format: Format,
}

/// The text of a quantity field as the API server receives it: a string as written (a word
/// kubectl's YAML 1.1 reads as a number, `1_000`, as that number), a number as JSON writes it;
/// `None` for another type.
pub fn sent_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => {
            Some(crate::kubectl_yaml11::kubectl_number(s).unwrap_or_else(|| s.clone()))
        }
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The largest number of digits read; a longer number is not read (it has no place in a pod).
const MAX_DIGITS: usize = 30;

impl Quantity {
    /// Reads `text`, or `None` when it is not a quantity (or too long to hold exactly).
    pub fn parse(text: &str) -> Option<Quantity> {
        let (negative, rest) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text.strip_prefix('+').unwrap_or(text)),
        };
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty()
            || fraction.contains('.')
            || whole.len() + fraction.len() > MAX_DIGITS
        {
            return None;
        }
        let digits: i128 = format!("{whole}{fraction}").parse().ok()?;
        let mut q = Quantity {
            num: if negative { -digits } else { digits },
            den: pow(10, fraction.len() as u32)?,
            format: Format::Decimal,
        };
        let (ten, two, format) = suffix_scale(suffix)?;
        q.format = format;
        q.num = q.num.checked_mul(pow(1024, two)?)?;
        match ten {
            e if e >= 0 => q.num = q.num.checked_mul(pow(10, e as u32)?)?,
            e => q.den = q.den.checked_mul(pow(10, e.unsigned_abs())?)?,
        }
        // `ParseQuantity` rounds what is finer than a nano up to the next nano.
        let nano = pow(10, 9)?;
        if q.den > nano {
            q.num = ceil_div(q.num.checked_mul(nano)?, q.den);
            q.den = nano;
        }
        Some(q)
    }

    /// The quantity a field holds as the API server receives it ([`sent_text`]).
    pub fn of_field(v: &serde_json::Value) -> Option<Quantity> {
        Quantity::parse(&sent_text(v)?)
    }

    /// A whole number of units.
    pub fn from_units(units: u64) -> Quantity {
        Quantity {
            num: i128::from(units),
            den: 1,
            format: Format::Decimal,
        }
    }

    pub fn is_zero(&self) -> bool {
        self.num == 0
    }

    /// Whether the quantity is a whole number of units.
    pub fn is_whole(&self) -> bool {
        self.num % self.den == 0
    }

    /// The quantity times `scale`, rounded up (`Quantity.MilliValue` for 1000, `Value` for 1).
    pub fn ceil_times(&self, scale: i128) -> Option<i128> {
        Some(ceil_div(self.num.checked_mul(scale)?, self.den))
    }

    /// The canonical form the API server writes the quantity in (`Quantity.String`).
    pub fn canonical(&self) -> Option<String> {
        if self.num == 0 {
            return Some("0".to_string());
        }
        // A binary value below 1024 in size is written in decimal (`CanonicalizeBytes`).
        let small = self.num.checked_abs()? < 1024i128.checked_mul(self.den)?;
        if self.format == Format::Binary && self.num % self.den == 0 && !small {
            let mut value = self.num / self.den;
            let mut k = 0;
            while k < 6 && value % 1024 == 0 {
                value /= 1024;
                k += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][k];
            return Some(format!("{value}{suffix}"));
        }
        // Decimal (and a binary value that is not whole): the largest power of 1000 down to
        // nano that leaves a whole number.
        let mut exponent = 18i32;
        while exponent >= -9 {
            let scaled = match exponent {
                e if e >= 0 => {
                    let unit = pow(10, e as u32)?.checked_mul(self.den)?;
                    (self.num % unit == 0).then(|| self.num / unit)
                }
                e => {
                    let num = self.num.checked_mul(pow(10, e.unsigned_abs())?)?;
                    (num % self.den == 0).then(|| num / self.den)
                }
            };
            if let Some(m) = scaled {
                return Some(match self.format {
                    Format::Exponent if exponent == 0 => m.to_string(),
                    Format::Exponent => format!("{m}e{exponent}"),
                    _ => format!("{m}{}", decimal_suffix(exponent)),
                });
            }
            exponent -= 3;
        }
        None
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Quantity) -> bool {
        self.partial_cmp(other) == Some(std::cmp::Ordering::Equal)
    }
}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Quantity) -> Option<std::cmp::Ordering> {
        let left = self.num.checked_mul(other.den)?;
        let right = other.num.checked_mul(self.den)?;
        Some(left.cmp(&right))
    }
}

/// The powers of ten and of 1024 a suffix stands for, and the format it implies.
fn suffix_scale(suffix: &str) -> Option<(i32, u32, Format)> {
    let binary = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    if let Some(k) = binary.iter().position(|s| *s == suffix) {
        return Some((0, k as u32 + 1, Format::Binary));
    }
    let decimal = match suffix {
        "" => Some(0),
        "n" => Some(-9),
        "u" => Some(-6),
        "m" => Some(-3),
        "k" => Some(3),
        "M" => Some(6),
        "G" => Some(9),
        "T" => Some(12),
        "P" => Some(15),
        "E" => Some(18),
        _ => None,
    };
    if let Some(e) = decimal {
        return Some((e, 0, Format::Decimal));
    }
    let exponent = suffix.strip_prefix(['e', 'E'])?;
    let e: i32 = exponent.parse().ok().filter(|e: &i32| e.abs() <= 30)?;
    Some((e, 0, Format::Exponent))
}

fn decimal_suffix(exponent: i32) -> &'static str {
    match exponent {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => "",
    }
}

fn pow(base: i128, exponent: u32) -> Option<i128> {
    base.checked_pow(exponent)
}

fn ceil_div(num: i128, den: i128) -> i128 {
    let q = num.div_euclid(den);
    if num.rem_euclid(den) == 0 { q } else { q + 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str) -> Quantity {
        Quantity::parse(text).unwrap_or_else(|| panic!("{text:?} does not parse"))
    }

    #[test]
    fn quantities_compare_exactly_whatever_their_units() {
        let equal = [
            ("700m", "0.7"),
            ("1001M", "1.001G"),
            ("8.3G", "8300M"),
            ("1Ki", "1024"),
            ("1e3", "1k"),
        ];
        for (a, b) in equal {
            assert_eq!(q(a), q(b), "{a} = {b}");
        }
        assert!(q("701m") > q("0.7"));
        assert_eq!(q("1.0000000019"), q("1.0000000011"));
        assert!(q("1Gi") > q("1G"));
        for bad in ["", ".", "1.2.3", "2Gb", "1K", "x", "1e"] {
            assert!(Quantity::parse(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn rounding_up_is_exact() {
        // (quantity, scale, rounded up)
        let table = [
            ("2.007", 1000, 2007),
            ("2.14G", 1, 2_140_000_000),
            ("1500m", 1, 2),
            ("1n", 1000, 1),
            ("0.5Ki", 1, 512),
            ("-1.5", 1, -1),
            // Finer than a nano is rounded up to the nano first.
            ("1.0000000011", 1_000_000_000, 1_000_000_002),
        ];
        for (text, scale, want) in table {
            assert_eq!(q(text).ceil_times(scale), Some(want), "{text} x {scale}");
        }
    }

    #[test]
    fn the_canonical_form_is_the_api_servers() {
        let table = [
            ("1000m", "1"),
            ("0.001", "1m"),
            ("1000", "1k"),
            ("1024", "1024"),
            ("1024Ki", "1Mi"),
            ("1536Mi", "1536Mi"),
            ("1.5Gi", "1536Mi"),
            ("0.5Ki", "512"),
            ("0.9765625Ki", "1k"),
            ("1500m", "1500m"),
            ("1e3", "1e3"),
            ("1e0", "1"),
            ("0", "0"),
        ];
        for (text, want) in table {
            assert_eq!(q(text).canonical().as_deref(), Some(want), "{text}");
        }
    }
}
