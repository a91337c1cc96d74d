//! Turns YAML or JSON text into a defaulted, validated `Experiment`, reporting every problem at
//! once: syntax (with line and column), unknown fields, type errors, then Katib's rules.

use crate::error::{SpecError, SpecErrors};
use crate::limits::{
    CappedReadError, MAX_NESTING, MAX_SPEC_BYTES, nesting_beyond, read_text_capped,
};
use crate::type_errors::later_type_errors;
use crate::types::{API_VERSION, Experiment, FIELD_NAMES, KIND};
use crate::{defaults, validate};
use regex::Regex;
use std::path::Path;
use std::sync::LazyLock;

/// Parses, defaults and validates an experiment written in YAML or JSON.
pub fn parse_experiment(text: &str) -> Result<Experiment, SpecErrors> {
    parse_experiment_served(text, &[])
}

/// [`parse_experiment`] accepting also the algorithm names in `served`, which an external
/// suggestion service serves (as Katib accepts any name its katib-config lists).
pub fn parse_experiment_served(text: &str, served: &[&str]) -> Result<Experiment, SpecErrors> {
    if let Some(merged) = with_merge_keys_applied(text)? {
        return parse_experiment_value_served(&merged, served);
    }
    let mut errors = SpecErrors::default();
    let (parsed, unknown) = deserialize(text)?;
    errors.0.extend(unknown);
    let mut exp = match parsed {
        Ok(exp) => exp,
        Err(type_errors) => {
            errors.0.extend(type_errors);
            return Err(errors);
        }
    };
    errors.0.extend(unknown_metadata_fields(&exp));
    errors.0.extend(check_version(&exp));
    defaults::apply_defaults(&mut exp);
    if let Err(invalid) = validate::validate_served(&exp, served) {
        errors.0.extend(invalid);
    }
    errors.into_result(exp)
}

/// Parses an experiment a store recorded: it was validated then, with whatever suggestion
/// service served its algorithm, so its own algorithm name is accepted whatever it is.
pub fn parse_stored_experiment(json: &str) -> Result<Experiment, SpecErrors> {
    let own = serde_json::from_str::<serde_json::Value>(json)
        .ok()
        .and_then(|v| {
            v["spec"]["algorithm"]["algorithmName"]
                .as_str()
                .map(str::to_owned)
        });
    let served: Vec<&str> = own.as_deref().into_iter().collect();
    parse_experiment_served(json, &served)
}

/// Parses an experiment already held as JSON (e.g. a custom resource read from Kubernetes).
/// It goes through the text parser so numbers written where Katib expects strings keep their
/// digits, and every check runs exactly as for a file.
/// A type error's position ("at line 1 column 292") is dropped: it points into text the user
/// never wrote; the field path names the place.
pub fn parse_experiment_value(value: &serde_json::Value) -> Result<Experiment, SpecErrors> {
    parse_experiment_value_served(value, &[])
}

/// [`parse_experiment_value`] accepting also the algorithm names in `served`, as
/// [`parse_experiment_served`] does.
pub fn parse_experiment_value_served(
    value: &serde_json::Value,
    served: &[&str],
) -> Result<Experiment, SpecErrors> {
    parse_experiment_served(&value.to_string(), served).map_err(|SpecErrors(errors)| {
        SpecErrors(
            errors
                .into_iter()
                .map(|e| match e {
                    SpecError::Field { path, message } => SpecError::Field {
                        path,
                        message: without_position(&message),
                    },
                    other => other,
                })
                .collect(),
        )
    })
}

/// `message` without the " at line N column M" that ends it (or its part before a hint).
fn without_position(message: &str) -> String {
    let (said, hint) = match message.split_once("; hint: ") {
        Some((said, hint)) => (said, format!("; hint: {hint}")),
        None => (message, String::new()),
    };
    let Some((head, tail)) = said.rsplit_once(" at line ") else {
        return message.to_string();
    };
    let is_position = tail.split_once(" column ").is_some_and(|(l, c)| {
        !l.is_empty()
            && !c.is_empty()
            && l.bytes().all(|b| b.is_ascii_digit())
            && c.bytes().all(|b| b.is_ascii_digit())
    });
    match is_position {
        true => format!("{head}{hint}"),
        false => message.to_string(),
    }
}

/// Reads `path` and parses it with [`parse_experiment`].
pub fn parse_experiment_file(path: &Path) -> Result<Experiment, SpecErrors> {
    parse_experiment_file_served(path, &[])
}

/// Reads `path` and parses it with [`parse_experiment_served`].
pub fn parse_experiment_file_served(
    path: &Path,
    served: &[&str],
) -> Result<Experiment, SpecErrors> {
    let text = read_text_capped(path, MAX_SPEC_BYTES).map_err(|e| {
        let message = match e {
            CappedReadError::Io(e) if e.kind() == std::io::ErrorKind::NotFound => {
                "file not found; hint: check the path and the working directory".to_string()
            }
            CappedReadError::Io(e) => format!("cannot read the file: {e}"),
            CappedReadError::TooLarge(limit) => format!(
                "the file is larger than the {} MiB an experiment file may have; hint: check \
                 the path (a device or a data file?)",
                limit >> 20
            ),
        };
        SpecError::Read {
            path: path.display().to_string(),
            message,
        }
    })?;
    parse_experiment_served(&text, served)
}

/// A plain `<<` key: YAML 1.1's merge key, which kubectl's reader applies.
static MERGE_KEY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)(?:^|[\s{,])<<[ \t]*:").expect("the pattern compiles"));

/// The experiment document with its merge keys (`<<: *base`) applied, as JSON, when it has
/// any: the typed reader would take `<<` for an unknown field. Messages about such a file name
/// field paths only (the JSON's positions are not the file's). A document that does not parse
/// is left to the usual path, which says where.
fn with_merge_keys_applied(text: &str) -> Result<Option<serde_json::Value>, SpecErrors> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if !MERGE_KEY.is_match(text) {
        return Ok(None);
    }
    let document = experiment_document(text)?;
    let Ok(mut value) = yaml_serde::from_str::<yaml_serde::Value>(&document) else {
        return Ok(None);
    };
    let written = value.clone();
    value.apply_merge().map_err(|e| {
        SpecError::new(
            "document",
            format!(
                "a merge key (<<) cannot be applied: {e}; hint: merge a mapping (<<: *anchor) \
                 or a list of mappings"
            ),
        )
    })?;
    // `<<:` inside a string is not a key.
    if value == written {
        return Ok(None);
    }
    match serde_json::to_value(&value) {
        Ok(json) => Ok(Some(json)),
        Err(_) => Ok(None),
    }
}

/// Syntax errors end parsing at once; otherwise returns the typed result (or every type error
/// found) together with every unknown field seen on the way.
#[allow(clippy::type_complexity)]
fn deserialize(
    text: &str,
) -> Result<(Result<Experiment, Vec<SpecError>>, Vec<SpecError>), SpecErrors> {
    // Editors on Windows start UTF-8 files with a byte-order mark; kubectl reads past it.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(SpecError::new(
            "document",
            "the document is empty; hint: write a Katib Experiment (apiVersion: kubeflow.org/v1beta1, kind: Experiment, metadata, spec)",
        )
        .into());
    }
    if let Some(line) = nesting_beyond(text, MAX_NESTING) {
        return Err(SpecError::Syntax {
            line,
            column: 0,
            message: format!(
                "the document nests more than {MAX_NESTING} levels of [ or {{; hint: a Katib \
                 experiment needs far fewer"
            ),
        }
        .into());
    }
    let document = experiment_document(text)?;
    let text = document.as_str();
    check_syntax(text)?;
    // JSON is read by the YAML deserializer too (JSON is a subset of YAML): it is the one that
    // hands any plain scalar to a string field verbatim, so `"min": 0.010` keeps its text.
    let de = yaml_serde::Deserializer::from_str(text);
    let mut unknown = Vec::new();
    let mut record = |p: serde_ignored::Path<'_>| unknown.push(format_ignored(&p));
    let ignored = serde_ignored::Deserializer::new(de, &mut record);
    let result: Result<Experiment, _> = serde_path_to_error::deserialize(ignored);
    let result = result.map_err(|e| {
        if is_too_deep(e.inner()) {
            return vec![too_deep(e.inner())];
        }
        let said = crate::duplicate_key::at_the_duplicate(text, &e.inner().to_string());
        let first = type_error(&e.path().to_string(), &said);
        let later = later_type_errors(text, e.path())
            .into_iter()
            .map(|t| type_error(&t.path, &t.message));
        std::iter::once(first).chain(later).collect()
    });
    let unknown = unknown
        .into_iter()
        .map(|path| {
            let key = path.rsplit('.').next().unwrap_or(&path).to_string();
            let mut message = format!("unknown field {key:?}");
            match closest_field(&key) {
                Some(near) if near == key => message
                    .push_str("; hint: this field belongs at another level, check the indentation"),
                Some(near) => message.push_str(&format!("; hint: did you mean {near:?}?")),
                None => message.push_str("; hint: remove it or check the Katib v1beta1 spec"),
            }
            SpecError::new(path, message)
        })
        .collect();
    Ok((result, unknown))
}

/// The one Experiment of a file of several YAML documents (`kubectl apply -f` takes a
/// ConfigMap and an Experiment together), with the other documents' lines left blank so line
/// numbers still point into the file; a file of one document as it is.
pub(crate) fn experiment_document(text: &str) -> Result<String, SpecError> {
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            l.strip_prefix("---")
                .is_some_and(|r| r.trim().is_empty() || r.starts_with([' ', '\t']))
        })
        .map(|(i, _)| i)
        .collect();
    let bounds = std::iter::once(0)
        .chain(starts.iter().map(|s| s + 1))
        .zip(starts.iter().copied().chain(std::iter::once(lines.len())));
    let documents: Vec<(usize, usize)> = bounds
        .filter(|&(from, to)| lines[from..to].iter().any(|l| !is_blank_line(l)))
        .collect();
    if documents.len() < 2 {
        return Ok(text.to_string());
    }
    let padded = |(from, to): (usize, usize)| "\n".repeat(from) + &lines[from..to].join("\n");
    let kind = |&(from, to): &(usize, usize)| {
        yaml_serde::from_str::<serde_json::Value>(&lines[from..to].join("\n"))
            .ok()
            .map(|v| {
                v.get("kind")
                    .and_then(|k| k.as_str())
                    .unwrap_or("")
                    .to_string()
            })
    };
    let kinds: Vec<Option<String>> = documents.iter().map(kind).collect();
    let experiments: Vec<usize> = (0..documents.len())
        .filter(|&i| kinds[i].as_deref() == Some("Experiment"))
        .collect();
    match experiments[..] {
        [one] => Ok(padded(documents[one])),
        [] => match kinds.iter().position(Option::is_none) {
            // A document that does not parse may be the experiment: its error is the one to see.
            Some(broken) => Ok(padded(documents[broken])),
            None => Err(SpecError::new(
                "kind",
                format!(
                    "none of the {} YAML documents in the file is an Experiment (kinds: {}); hint: put the Experiment in the file",
                    documents.len(),
                    kinds
                        .iter()
                        .flatten()
                        .map(|k| if k.is_empty() { "none" } else { k })
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        },
        _ => Err(SpecError::new(
            "kind",
            format!(
                "{} of the YAML documents in the file are Experiments; hint: keep one Experiment per file",
                experiments.len()
            ),
        )),
    }
}

fn is_blank_line(line: &str) -> bool {
    let l = line.trim();
    l.is_empty() || l.starts_with('#') || l == "..."
}

fn check_syntax(text: &str) -> Result<(), SpecError> {
    // serde_json words JSON mistakes better than a YAML parser does.
    if text.trim_start().starts_with('{')
        && let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text)
    {
        return Err(SpecError::Syntax {
            line: e.line(),
            column: e.column(),
            message: format!("invalid json: {e}"),
        });
    }
    if let Err(e) = yaml_serde::from_str::<serde::de::IgnoredAny>(text) {
        if is_too_deep(&e) {
            return Err(too_deep(&e));
        }
        let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
        return Err(SpecError::Syntax {
            line,
            column,
            message: format!("invalid yaml: {e}; hint: {}", syntax_hint(text, line)),
        });
    }
    Ok(())
}

/// What to look at for a YAML syntax error at `line` (1-based): a tab in an indentation,
/// which YAML forbids and an editor hides, else the indentation and quoting there.
fn syntax_hint(text: &str, line: usize) -> String {
    let indented_with_tab = |l: &str| {
        l.chars()
            .take_while(|c| c.is_whitespace())
            .any(|c| c == '\t')
    };
    let tab_near = text
        .lines()
        .skip(line.saturating_sub(2))
        .take(2)
        .any(indented_with_tab);
    match tab_near {
        true => "YAML indents with spaces only; replace the tab characters at the start of the line with spaces".into(),
        false => format!(
            "check the indentation, colons and quotes on line {line} and the line before it"
        ),
    }
}

/// Block nesting (`- - - -`, indented mappings) has no brackets to count up front; the YAML
/// deserializer stops at its own depth limit (128, as [`MAX_NESTING`]) and says so in its words.
fn is_too_deep(e: &yaml_serde::Error) -> bool {
    e.to_string().contains("recursion limit exceeded")
}

/// The nesting error, at the line where the limit was passed (not a path 128 levels long).
fn too_deep(e: &yaml_serde::Error) -> SpecError {
    let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
    SpecError::Syntax {
        line,
        column,
        message: format!(
            "the document nests more than {MAX_NESTING} levels of block sequences or mappings; \
             hint: a Katib experiment needs far fewer"
        ),
    }
}

fn check_version(exp: &Experiment) -> Vec<SpecError> {
    [
        ("apiVersion", exp.api_version.as_str(), API_VERSION),
        ("kind", exp.kind.as_str(), KIND),
    ]
    .into_iter()
    .filter(|(_, value, wanted)| value != wanted)
    .map(|(field, value, wanted)| {
        let what = if value.trim().is_empty() {
            "is required".to_string()
        } else {
            format!("value {value:?} is not supported")
        };
        SpecError::new(field, format!("{what}; hint: set {field}: {wanted}"))
    })
    .collect()
}

/// Renders a `serde_ignored` path in the same `a.b[1].c` form as every other error.
fn format_ignored(path: &serde_ignored::Path<'_>) -> String {
    match path {
        serde_ignored::Path::Root => String::new(),
        serde_ignored::Path::Seq { parent, index } => {
            format!("{}[{index}]", format_ignored(parent))
        }
        serde_ignored::Path::Map { parent, key } => {
            let parent = format_ignored(parent);
            if parent.is_empty() {
                key.clone()
            } else {
                format!("{parent}.{key}")
            }
        }
        serde_ignored::Path::Some { parent }
        | serde_ignored::Path::NewtypeStruct { parent }
        | serde_ignored::Path::NewtypeVariant { parent } => format_ignored(parent),
    }
}

/// A type error at `path` (serde's `.` for the root), in the words of every other error.
fn type_error(path: &str, message: &str) -> SpecError {
    let path = if path == "." { "document" } else { path };
    let message = plain_words(&strip_inner_path(message));
    match crate::kubectl_yaml11::boolean_word_hint(&message) {
        Some(hint) => SpecError::new(path, format!("{message}; {hint}")),
        None => SpecError::new(path, message),
    }
}

/// serde names Rust types ("expected i32"); a Katib user reads YAML, so say what to write.
fn plain_words(message: &str) -> String {
    let Some((head, expected)) = message.split_once(", expected ") else {
        return message.to_string();
    };
    let (what, rest) = expected.split_once(' ').unwrap_or((expected, ""));
    let plain = match what {
        // An integer of the wrong size: the range Katib's field holds (int32 for the counts).
        "i32" if head.starts_with("invalid value: integer") => {
            format!("an integer from {} to {}", i32::MIN, i32::MAX)
        }
        "u32" if head.starts_with("invalid value: integer") => {
            format!("an integer from 0 to {}", u32::MAX)
        }
        "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64" | "usize" => {
            "an integer".to_string()
        }
        "f32" | "f64" => "a number".to_string(),
        "struct" => {
            let rest = rest.split_once(' ').map_or("", |(_, tail)| tail);
            return format!("{head}, expected a mapping{}", prefixed(rest));
        }
        _ => return message.to_string(),
    };
    // `maxTrialCount: "4"`: the number is right, the quotes make it text.
    let quoted_number = head
        .strip_prefix("invalid type: string ")
        .is_some_and(|q| q.trim_matches('"').trim().parse::<f64>().is_ok());
    let unquote = match quoted_number {
        true => "; hint: write the number without quotes",
        false => "",
    };
    format!("{head}, expected {plain}{}{unquote}", prefixed(rest))
}

fn prefixed(rest: &str) -> String {
    if rest.is_empty() {
        String::new()
    } else {
        format!(" {rest}")
    }
}

/// The YAML deserializer prefixes its own copy of the path; we print ours in front already.
fn strip_inner_path(message: &str) -> String {
    if let Some((head, rest)) = message.split_once(": ")
        && !head.contains(char::is_whitespace)
        && !rest.is_empty()
    {
        return rest.to_string();
    }
    message.to_string()
}

/// `ObjectMeta`'s fields besides the four the Experiment reads: kept as they are, so the YAML
/// of `kubectl get -o yaml` (uid, managedFields, ...) is read unchanged.
const OTHER_METADATA_FIELDS: [&str; 11] = [
    "generateName",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "finalizers",
    "ownerReferences",
    "managedFields",
    "selfLink",
];

/// Fields of `metadata` that are none of `ObjectMeta`'s, as kubectl's strict field validation
/// refuses them (`namspace: team-a` would otherwise run in the default namespace unnoticed).
fn unknown_metadata_fields(exp: &Experiment) -> Vec<SpecError> {
    let known = ["name", "namespace", "labels", "annotations"]
        .into_iter()
        .chain(OTHER_METADATA_FIELDS);
    let known: Vec<&str> = known.collect();
    exp.metadata
        .extra
        .keys()
        .filter(|k| !known.contains(&k.as_str()))
        .map(|k| {
            let hint = match crate::closest::closest_of(k, &known) {
                Some(f) => format!("did you mean {f:?}?"),
                None => "remove it, or put it under metadata.labels or metadata.annotations".into(),
            };
            SpecError::new(
                format!("metadata.{k}"),
                format!("unknown field {k:?}; hint: {hint}"),
            )
        })
        .collect()
}

fn closest_field(key: &str) -> Option<&'static str> {
    crate::closest::closest_of(key, FIELD_NAMES)
}
