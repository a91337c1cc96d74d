//! Lists Katib accepts that Vernier samples a little differently: a `discrete` list holding a
//! value that is not a finite number is categorical, and a repeated value is sampled once
//! ("1" and "1.0" are one value of a numeric list). One rule for the YAML path
//! (`vernier_spec`) and the wire (`vernier_proto`), so a Katib controller and `vernier run`
//! search the same space for one spec; each words the warnings with its own field paths.

use crate::space::Domain;
use std::collections::HashMap;
use std::collections::hash_map::Entry;

/// Something odd in a list, at a position of the list as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListOddity {
    /// A `discrete` list's first value that is not a finite number: the list is categorical.
    NotANumber { index: usize },
    /// A value equal to the one at `first`: sampled once.
    Repeat { index: usize, first: usize },
}

impl ListOddity {
    /// Where in the list it is.
    pub fn index(&self) -> usize {
        match *self {
            ListOddity::NotANumber { index } | ListOddity::Repeat { index, .. } => index,
        }
    }

    /// What Vernier does about it, for a warning at the list's `index`; `categorical` is the
    /// type's name as the caller's input spells it (`categorical`, `CATEGORICAL`).
    pub fn message(&self, list: &[String], categorical: &str) -> String {
        match *self {
            ListOddity::NotANumber { index } => format!(
                "value {:?} is not a number, so the list is treated as categorical (Katib \
                 accepts it); hint: make the parameter {categorical} to say so",
                list[index]
            ),
            ListOddity::Repeat { index, first } => format!(
                "value {:?} duplicates list[{first}]; it is sampled once; hint: list each \
                 value once",
                list[index]
            ),
        }
    }
}

/// A list's domain and what was odd about it, in list order (a non-number first).
#[derive(Debug, Clone, PartialEq)]
pub struct ToleratedList {
    pub domain: Domain,
    pub oddities: Vec<ListOddity>,
}

/// Two list values that are one choice: the same text, or in a numeric list the same number
/// (-0 folded onto 0).
#[derive(Hash, PartialEq, Eq)]
enum ListKey<'a> {
    Number(u64),
    Text(&'a str),
}

fn finite(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The domain of a `discrete` (`discrete: true`) or `categorical` list: categorical when a
/// discrete value is not a finite number, each value once (the first spelling kept). A map of
/// first positions keeps it linear: a quadratic scan took 24 s over 100,000 values.
pub fn tolerated_list(discrete: bool, list: &[String]) -> ToleratedList {
    let label = list.iter().position(|v| finite(v).is_none());
    let mut oddities: Vec<ListOddity> = Vec::new();
    if discrete && let Some(index) = label {
        oddities.push(ListOddity::NotANumber { index });
    }
    let numeric = discrete && label.is_none();
    let mut first: HashMap<ListKey<'_>, usize> = HashMap::with_capacity(list.len());
    let mut values = Vec::with_capacity(list.len());
    for (index, v) in list.iter().enumerate() {
        let key = match finite(v) {
            Some(x) if numeric => ListKey::Number((x + 0.0).to_bits()),
            _ => ListKey::Text(v),
        };
        match first.entry(key) {
            Entry::Vacant(slot) => {
                slot.insert(index);
                values.push(v.clone());
            }
            Entry::Occupied(j) => oddities.push(ListOddity::Repeat {
                index,
                first: *j.get(),
            }),
        }
    }
    let domain = if numeric {
        Domain::Discrete { values }
    } else {
        Domain::Categorical { values }
    };
    ToleratedList { domain, oddities }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|v| v.to_string()).collect()
    }

    #[test]
    fn lists_keep_each_value_once_and_a_label_makes_them_categorical() {
        use ListOddity::{NotANumber, Repeat};
        let cases: &[(bool, &[&str], Domain, &[ListOddity])] = &[
            (
                false,
                &["sgd", "adam", "sgd"],
                Domain::Categorical {
                    values: strings(&["sgd", "adam"]),
                },
                &[Repeat { index: 2, first: 0 }],
            ),
            (
                true,
                &["16", "32", "auto"],
                Domain::Categorical {
                    values: strings(&["16", "32", "auto"]),
                },
                &[NotANumber { index: 2 }],
            ),
            (
                true,
                &["1", "1.0", "-0", "0", "2"],
                Domain::Discrete {
                    values: strings(&["1", "-0", "2"]),
                },
                &[Repeat { index: 1, first: 0 }, Repeat { index: 3, first: 2 }],
            ),
            // `inf` is no number: a label, so categorical, and only text repeats count.
            (
                true,
                &["1", "inf", "1.0", "1"],
                Domain::Categorical {
                    values: strings(&["1", "inf", "1.0"]),
                },
                &[NotANumber { index: 1 }, Repeat { index: 3, first: 0 }],
            ),
            (
                false,
                &["1", "1.0"],
                Domain::Categorical {
                    values: strings(&["1", "1.0"]),
                },
                &[],
            ),
        ];
        for (discrete, list, domain, oddities) in cases {
            let got = tolerated_list(*discrete, &strings(list));
            assert_eq!(&got.domain, domain, "{list:?}");
            assert_eq!(got.oddities, *oddities, "{list:?}");
        }
        let list = strings(&["a", "b", "a"]);
        let repeat = Repeat { index: 2, first: 0 };
        assert_eq!(repeat.index(), 2);
        assert!(
            repeat
                .message(&list, "categorical")
                .starts_with("value \"a\" duplicates list[0]; it is sampled once")
        );
        let label = NotANumber { index: 1 }.message(&list, "CATEGORICAL");
        assert!(label.contains("\"b\" is not a number") && label.contains("CATEGORICAL"));
    }
}
