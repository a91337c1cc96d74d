//! Parameter values and assignments (one value per parameter, in search-space order).

use serde::{Deserialize, Serialize};

/// A parameter's value. Discrete and categorical values keep the exact string of the list, so
/// `"0.10"` is echoed back as `"0.10"`, as Katib does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    Int(i64),
    Double(f64),
    Choice(String),
}

impl ParamValue {
    /// The value as a number where it is one (choices that parse as numbers included).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            ParamValue::Int(i) => Some(*i as f64),
            ParamValue::Double(d) => Some(*d),
            ParamValue::Choice(s) => s.trim().parse().ok(),
        }
    }
}

impl std::fmt::Display for ParamValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamValue::Int(i) => write!(f, "{i}"),
            // The shortest string that parses back to the same value, in exponent form for
            // huge and tiny values (a bound of 1.7e308 was written with 309 digits).
            ParamValue::Double(d) => write!(f, "{}", crate::Short(*d)),
            ParamValue::Choice(s) => f.write_str(s),
        }
    }
}

/// One value per parameter, in the order of the search space.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Assignment(pub Vec<(String, ParamValue)>);

impl Assignment {
    pub fn get(&self, name: &str) -> Option<&ParamValue> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    pub fn iter(&self) -> impl Iterator<Item = &(String, ParamValue)> {
        self.0.iter()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Name/value pairs as strings, the form Katib stores and sends.
    pub fn to_strings(&self) -> Vec<(String, String)> {
        self.0
            .iter()
            .map(|(n, v)| (n.clone(), v.to_string()))
            .collect()
    }

    /// A canonical text used to recognise identical configurations: `name=value` pairs by
    /// name, joined by `,`; a `\`, `,` or `=` inside a name or value is escaped with `\`, so
    /// two configurations never share a key (`a="1,b=2", b="3"` and `a="1", b="2,b=3"` did).
    /// Text without them is written as it is, as before the escaping, so keys Katib's
    /// controller carries in its settings from an earlier version still match.
    pub fn key(&self) -> String {
        let mut pairs = self.to_strings();
        pairs.sort();
        pairs
            .iter()
            .map(|(n, v)| format!("{}={}", key_text(n), key_text(v)))
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl std::fmt::Display for Assignment {
    /// `name=value, ...` for people; a value holding a control character (a categorical
    /// `"a\nb"`) is shown quoted and escaped, so it never breaks the line it is printed on.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(n, v)| shown_pair(n, &v.to_string()))
            .collect();
        f.write_str(&parts.join(", "))
    }
}

/// `name=value` as people read it: quoted and escaped when the value holds a control
/// character, so a value can never break the line it is printed on.
pub fn shown_pair(name: &str, value: &str) -> String {
    if value.chars().any(char::is_control) {
        format!("{name}={value:?}")
    } else {
        format!("{name}={value}")
    }
}

/// `text` with `\`, `,` and `=` escaped for [`Assignment::key`].
fn key_text(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\\', ',', '=']) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 4);
    for c in text.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_and_keys() {
        let a = Assignment(vec![
            ("lr".into(), ParamValue::Double(0.1)),
            ("layers".into(), ParamValue::Int(3)),
            ("opt".into(), ParamValue::Choice("adam".into())),
        ]);
        assert_eq!(a.to_string(), "lr=0.1, layers=3, opt=adam");
        assert_eq!(a.key(), "layers=3,lr=0.1,opt=adam");
        // Separators inside values cannot make two configurations one.
        let choice = |a: &str, b: &str| {
            Assignment(vec![
                ("a".into(), ParamValue::Choice(a.into())),
                ("b".into(), ParamValue::Choice(b.into())),
            ])
        };
        let (one, other) = (choice("1,b=2", "3"), choice("1", "2,b=3"));
        assert_ne!(one.key(), other.key());
        assert_eq!(one.key(), "a=1\\,b\\=2,b=3");
        assert_eq!(choice("c:\\x", "y").key(), "a=c:\\\\x,b=y");
        assert_eq!(a.get("layers"), Some(&ParamValue::Int(3)));
        assert_eq!(ParamValue::Choice("0.5".into()).as_f64(), Some(0.5));
        // A control character never reaches the terminal raw.
        let odd = Assignment(vec![("c".into(), ParamValue::Choice("a\nb".into()))]);
        assert_eq!(odd.to_string(), "c=\"a\\nb\"");
        assert_eq!(odd.to_strings()[0].1, "a\nb");
    }
}
