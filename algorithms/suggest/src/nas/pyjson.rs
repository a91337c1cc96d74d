//! Katib's NAS services hand their assignments to trials as `json.dumps(x)` with every `"`
//! replaced by `'`; this writes the same text from Rust values, so Katib's DARTS and ENAS trial
//! images parse Vernier's assignments unchanged. Hand-written because the format is Python's
//! (`", "`/`": "` separators, `repr` floats such as `5.0` and `1e-05`, ASCII escapes), which no
//! JSON crate reproduces.

use std::fmt::Write;

/// A value as Python's `json.dumps` sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum PyJson {
    Null,
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<PyJson>),
    /// Keys in insertion order, as Python dicts keep them.
    Dict(Vec<(String, PyJson)>),
}

impl PyJson {
    /// `json.dumps(self)` with `"` replaced by `'`, as Katib's services send it.
    pub fn katib_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out.replace('"', "'")
    }

    fn write(&self, out: &mut String) {
        match self {
            PyJson::Null => out.push_str("null"),
            PyJson::Int(i) => {
                let _ = write!(out, "{i}");
            }
            PyJson::Float(f) => out.push_str(&py_float(*f)),
            PyJson::Str(s) => write_str(out, s),
            PyJson::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.write(out);
                }
                out.push(']');
            }
            PyJson::Dict(pairs) => {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_str(out, k);
                    out.push_str(": ");
                    v.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// Python's `repr(float)`: the shortest round-trip digits, positional for exponents in
/// [-4, 16), scientific (`1e-05`, `1.5e+16`) otherwise; `NaN`/`Infinity` as `json.dumps` writes.
pub fn py_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if f == 0.0 || (-4..16).contains(&exp) {
        let plain = format!("{f}");
        return if plain.contains('.') {
            plain
        } else {
            format!("{plain}.0")
        };
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_python_repr() {
        let table = [
            (0.025, "0.025"),
            (3e-4, "0.0003"),
            (5.0, "5.0"),
            (1e-5, "1e-05"),
            (5e-5, "5e-05"),
            (0.999, "0.999"),
            (128.0, "128.0"),
            (1.5e16, "1.5e+16"),
            (-2.25, "-2.25"),
            (0.0, "0.0"),
        ];
        for (f, want) in table {
            assert_eq!(py_float(f), want, "{f}");
        }
    }

    #[test]
    fn writes_katib_quoted_json() {
        let v = PyJson::Dict(vec![
            ("num_epochs".into(), PyJson::Str("1".into())),
            ("w_lr".into(), PyJson::Float(0.025)),
            ("batch_size".into(), PyJson::Null),
            (
                "list".into(),
                PyJson::List(vec![PyJson::Int(1), PyJson::Str("é\"".into())]),
            ),
        ]);
        assert_eq!(
            v.katib_text(),
            r#"{'num_epochs': '1', 'w_lr': 0.025, 'batch_size': null, 'list': [1, '\u00e9\'']}"#
        );
    }
}
