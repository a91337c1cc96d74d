//! Plain words that kubectl reads otherwise than Vernier does: Vernier's YAML reader follows
//! YAML 1.2, where `yes`, `off`, `n` and `1_000` are text, but kubectl converts a file to JSON
//! with YAML 1.1's rules (go-yaml v2), so `list: [yes, no]` reaches the API server as
//! `[true, false]`, a parameter named `n` as `false` and `value: 1_000` as `1000`. Where
//! Katib's API or a Pod takes text, the cluster refuses it; these are said as warnings, like
//! numbers written in text fields (`unquoted`), so a spec that runs on a laptop is not thought
//! ready for the cluster. A field that takes a boolean (`hostNetwork: no`) is read alike by
//! both, so only fields known to take text are named; a key kubectl renames (`on:` becomes
//! `"true":`) is a note of its own, as the cluster accepts the renamed object.
//!
//! The scalar's style (plain or quoted) is only in the parser's events, not in a deserialized
//! value, hence `saphyr-parser` beside the deserializer. Aliases are followed: a word under an
//! anchor is named wherever an alias repeats it, as kubectl expands them.

use crate::error::SpecError;
use saphyr_parser::{Event, Parser, ScalarStyle};
use std::collections::HashMap;

/// The plain words YAML 1.1 (go-yaml v2, which kubectl's converter uses) reads as booleans and
/// YAML 1.2 reads as text; `true`/`false` and their capitalised forms are booleans in both.
const YAML11_ONLY_BOOLEANS: [(&str, bool); 16] = [
    ("y", true),
    ("Y", true),
    ("yes", true),
    ("Yes", true),
    ("YES", true),
    ("on", true),
    ("On", true),
    ("ON", true),
    ("n", false),
    ("N", false),
    ("no", false),
    ("No", false),
    ("NO", false),
    ("off", false),
    ("Off", false),
    ("OFF", false),
];

/// Keys whose values take text in Katib's API or a Pod (`value` only in the lists of
/// [`VALUE_LISTS`]: an Argo or Tekton parameter's `value` takes any scalar).
const TEXT_FIELDS: [&str; 13] = [
    "name",
    "image",
    "reference",
    "description",
    "objectiveMetricName",
    "primaryContainerName",
    "algorithmName",
    "min",
    "max",
    "step",
    "namespace",
    "workingDir",
    "kind",
];

/// Keys whose items take text.
const TEXT_LISTS: [&str; 5] = [
    "list",
    "command",
    "args",
    "additionalMetricNames",
    "metricsFormat",
];

/// Maps whose every value is text.
const TEXT_MAPS: [&str; 4] = ["labels", "annotations", "nodeSelector", "primaryPodLabels"];

/// Lists whose items' `value` is text.
const VALUE_LISTS: [&str; 3] = ["env", "algorithmSettings", "metricStrategies"];

/// What kubectl reads in the experiment document of a file.
#[derive(Debug, Default, PartialEq)]
pub struct Yaml11Readings {
    /// Values in text fields that kubectl sends as booleans or numbers: a cluster refuses them.
    pub refused: Vec<SpecError>,
    /// Keys kubectl renames (`on:` is sent as `"true":`).
    pub renamed_keys: Vec<SpecError>,
}

/// What kubectl reads otherwise in the experiment document of `text`. A document that does
/// not parse has nothing (its parse error is reported elsewhere).
pub fn kubectl_yaml11(text: &str) -> Yaml11Readings {
    let Ok(document) = crate::parse::experiment_document(text) else {
        return Yaml11Readings::default();
    };
    let mut walk = Walk::default();
    for event in Parser::new_from_str(&document) {
        let Ok((event, _)) = event else {
            return Yaml11Readings::default();
        };
        walk.step(event);
    }
    walk.found
}

/// How YAML 1.1 reads a plain word that YAML 1.2 reads as text.
#[derive(Debug, Clone, PartialEq)]
enum Reading {
    Boolean(bool),
    Number(String),
}

impl Reading {
    fn of(word: &str) -> Option<Reading> {
        if let Some(&(_, b)) = YAML11_ONLY_BOOLEANS.iter().find(|(w, _)| *w == word) {
            return Some(Reading::Boolean(b));
        }
        // A leading zero (`010`) keeps a word text in YAML 1.2 and makes it octal for go-yaml
        // v2 (`09`, no octal, its `ParseFloat` reads as 9).
        let digits = word.trim_start_matches(['+', '-']);
        if digits.len() > 1 && digits.starts_with('0') && digits.bytes().all(|b| b.is_ascii_digit())
        {
            let float = || word.parse::<f64>().ok().map(|f| f.to_string());
            return go_int(word)
                .map(|n| n.to_string())
                .or_else(float)
                .map(Reading::Number);
        }
        // go-yaml v2 drops `_` before reading a number (Go's `ParseInt(s, 0, 64)`, then
        // `ParseFloat`); YAML 1.2 keeps such a word as text. A word starting with `_` is text
        // for both.
        if !word.contains('_')
            || !word.starts_with(|c: char| c.is_ascii_digit() || "+-.".contains(c))
        {
            return None;
        }
        let plain = word.replace('_', "");
        if let Some(n) = go_int(&plain) {
            return Some(Reading::Number(n.to_string()));
        }
        let float = plain.bytes().any(|b| b.is_ascii_digit()) && plain.parse::<f64>().is_ok();
        float.then_some(Reading::Number(plain))
    }

    fn shown(&self) -> String {
        match self {
            Reading::Boolean(b) => format!("the boolean {b}"),
            Reading::Number(n) => format!("the number {n}"),
        }
    }

    /// What sigs.k8s.io/yaml makes of it as a key.
    fn as_key(&self) -> String {
        match self {
            Reading::Boolean(b) => b.to_string(),
            Reading::Number(n) => n.clone(),
        }
    }
}

/// The number kubectl's YAML 1.1 reader makes of a plain word Vernier's YAML 1.2 reader keeps
/// as text (`1_000` is 1000, `010` is 8), if it makes one.
pub(crate) fn kubectl_number(word: &str) -> Option<String> {
    match Reading::of(word)? {
        Reading::Number(n) => Some(n),
        Reading::Boolean(_) => None,
    }
}

/// Go's `strconv.ParseInt(text, 0, 64)`: a sign, then `0x`, `0b` or `0o` for hexadecimal,
/// binary or octal, a leading `0` for octal, else decimal.
fn go_int(text: &str) -> Option<i64> {
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let n = i64::from_str_radix(digits, radix).ok()?;
    Some(if negative { -n } else { n })
}

/// Where the walk is in the document: one frame per open mapping or sequence.
#[derive(Default)]
struct Walk {
    frames: Vec<Frame>,
    /// Anchored collections still open: their anchor and path.
    open_anchors: Vec<(usize, String)>,
    /// Per anchor, the words found under it: their path below the anchor, the word, how
    /// read, and whether its field takes text there.
    anchored: HashMap<usize, Vec<FoundWord>>,
    found: Yaml11Readings,
}

/// A word found, where it is below the anchor it is remembered under (empty when none), and
/// whether its field takes text there (an alias repeats the word with that reading).
#[derive(Clone)]
struct FoundWord {
    below: String,
    word: String,
    read: Reading,
    text: bool,
}

enum Frame {
    /// A mapping, with the key whose value comes next (`None` while a key is awaited); the
    /// anchor and path of the collection are pushed to `open_anchors` separately.
    Mapping(Option<String>, usize),
    /// A sequence, with the index of the next item.
    Sequence(usize, usize),
}

impl Walk {
    fn step(&mut self, event: Event<'_>) {
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                let read = (style == ScalarStyle::Plain && tag.is_none())
                    .then(|| Reading::of(&text))
                    .flatten();
                match read {
                    Some(r) if self.awaits_key() => {
                        let path = self.path_with(&text);
                        self.found.renamed_keys.push(key_note(&path, &text, &r));
                    }
                    Some(read) => {
                        let found = FoundWord {
                            below: String::new(),
                            word: text.to_string(),
                            read,
                            text: self.takes_text_here(),
                        };
                        if anchor != 0 {
                            self.anchored.entry(anchor).or_default().push(found.clone());
                        }
                        self.value(&self.here(), found);
                    }
                    None => {}
                }
                self.node_done(Some(&text));
            }
            Event::Alias(anchor) => {
                if !self.awaits_key() {
                    let at = self.here();
                    for found in self.anchored.get(&anchor).cloned().unwrap_or_default() {
                        self.value(&format!("{at}{}", found.below), found);
                    }
                }
                self.node_done(None);
            }
            Event::MappingStart(anchor, _) => self.open(anchor, true),
            Event::SequenceStart(anchor, _) => self.open(anchor, false),
            Event::MappingEnd | Event::SequenceEnd => {
                let anchor = match self.frames.pop() {
                    Some(Frame::Mapping(_, a) | Frame::Sequence(_, a)) => a,
                    None => 0,
                };
                if anchor != 0 {
                    self.open_anchors.pop();
                }
                self.node_done(None);
            }
            _ => {}
        }
    }

    fn open(&mut self, anchor: usize, mapping: bool) {
        if anchor != 0 {
            self.open_anchors.push((anchor, self.here()));
        }
        self.frames.push(match mapping {
            true => Frame::Mapping(None, anchor),
            false => Frame::Sequence(0, anchor),
        });
    }

    /// A word in value position at `path`: named when its field takes text, and remembered
    /// under every anchored collection it is in.
    fn value(&mut self, path: &str, found: FoundWord) {
        for (anchor, base) in &self.open_anchors {
            if let Some(below) = path.strip_prefix(base.as_str()) {
                let below = below.to_string();
                let under = FoundWord {
                    below,
                    ..found.clone()
                };
                self.anchored.entry(*anchor).or_default().push(under);
            }
        }
        if found.text {
            let said = refusal(path, &found.word, &found.read);
            self.found.refused.push(said);
        }
    }

    /// Whether the node in value position takes text in Katib's API or a Pod: a field of
    /// [`TEXT_FIELDS`], an item of [`TEXT_LISTS`], a value of [`TEXT_MAPS`] (keys are whole,
    /// so `sidecar.istio.io/inject` is one), or the `value` of an item of [`VALUE_LISTS`].
    fn takes_text_here(&self) -> bool {
        let key = |from_end: usize| -> Option<&str> {
            let i = self.frames.len().checked_sub(from_end + 1)?;
            match &self.frames[i] {
                Frame::Mapping(Some(k), _) => Some(k.as_str()),
                _ => None,
            }
        };
        match self.frames.last() {
            Some(Frame::Sequence(..)) => key(1).is_some_and(|k| TEXT_LISTS.contains(&k)),
            Some(Frame::Mapping(Some(k), _)) => {
                key(1).is_some_and(|parent| TEXT_MAPS.contains(&parent))
                    || TEXT_FIELDS.contains(&k.as_str())
                    || (k == "value" && key(2).is_some_and(|list| VALUE_LISTS.contains(&list)))
            }
            _ => false,
        }
    }

    fn awaits_key(&self) -> bool {
        matches!(self.frames.last(), Some(Frame::Mapping(None, _)))
    }

    /// The path of the node in value position (or of the next sequence item).
    fn here(&self) -> String {
        self.path_with("?")
    }

    /// The path of the node being read; a key awaited is `key`.
    fn path_with(&self, key: &str) -> String {
        let mut path = String::new();
        for frame in &self.frames {
            match frame {
                Frame::Mapping(Some(k), _) => push_key(&mut path, k),
                Frame::Mapping(None, _) => push_key(&mut path, key),
                Frame::Sequence(i, _) => path.push_str(&format!("[{i}]")),
            }
        }
        path
    }

    /// A node ended (a scalar, an alias or a whole collection): in a mapping it was the key
    /// (`key` is its text, when it has one) or the value; in a sequence, an item.
    fn node_done(&mut self, key: Option<&str>) {
        match self.frames.last_mut() {
            Some(Frame::Mapping(slot @ None, _)) => *slot = Some(key.unwrap_or("?").to_string()),
            Some(Frame::Mapping(slot, _)) => *slot = None,
            Some(Frame::Sequence(i, _)) => *i += 1,
            None => {}
        }
    }
}

fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

/// For a type error where a boolean was wanted and a YAML 1.1 boolean word was written
/// (`retain: yes`, `stdin: on`), the hint: kubectl accepts it, Vernier's reader does not.
pub(crate) fn boolean_word_hint(message: &str) -> Option<String> {
    let (_, rest) = message.split_once("invalid type: string \"")?;
    let (word, rest) = rest.split_once('"')?;
    if !rest.starts_with(", expected a boolean") {
        return None;
    }
    let Some(Reading::Boolean(b)) = Reading::of(word) else {
        return None;
    };
    Some(format!(
        "hint: write {b}: kubectl reads {word} as {b} (YAML 1.1), Vernier's reader (YAML 1.2) \
         reads it as text"
    ))
}

fn refusal(path: &str, word: &str, read: &Reading) -> SpecError {
    SpecError::new(
        path,
        format!(
            "value {word} is written unquoted, and kubectl reads it as {} (YAML 1.1), where \
             Katib's API and a Pod take text, so a cluster refuses the experiment or its trials \
             (Vernier reads the text {word}); hint: quote it, as in \"{word}\"",
            read.shown()
        ),
    )
}

fn key_note(path: &str, word: &str, read: &Reading) -> SpecError {
    SpecError::new(
        path,
        format!(
            "key {word} is written unquoted, and kubectl sends it as the key \"{}\" (YAML 1.1), \
             where Vernier reads {word}; hint: quote it, as in \"{word}\"",
            read.as_key()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(found: &[SpecError]) -> Vec<String> {
        found.iter().map(SpecError::path).collect()
    }

    #[test]
    fn plain_yaml11_words_in_text_fields_are_named_where_they_are() {
        let yaml = r#"
apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata: {name: e, labels: {on: "x", team: no}}
spec:
  objective: {type: minimize, objectiveMetricName: loss}
  parameters:
    - name: n
      parameterType: categorical
      feasibleSpace: {list: [yes, "no", 'off', sgd, true, 1_000]}
  trialTemplate:
    trialParameters: [{name: n, reference: n}]
    trialSpec:
      spec:
        template:
          spec:
            hostNetwork: no
            containers:
              - name: t
                stdin: yes
                env: [{name: UMASK, value: 0_22}]
                args:
                  - |
                    yes
                  - !!str off
                  - OFF
"#;
        let found = kubectl_yaml11(yaml);
        assert_eq!(
            paths(&found.refused),
            [
                "metadata.labels.team",
                "spec.parameters[0].name",
                "spec.parameters[0].feasibleSpace.list[0]",
                "spec.parameters[0].feasibleSpace.list[5]",
                "spec.trialTemplate.trialParameters[0].name",
                "spec.trialTemplate.trialParameters[0].reference",
                "spec.trialTemplate.trialSpec.spec.template.spec.containers[0].env[0].value",
                "spec.trialTemplate.trialSpec.spec.template.spec.containers[0].args[2]",
            ]
        );
        assert_eq!(paths(&found.renamed_keys), ["metadata.labels.on"]);
        let said: Vec<String> = found.refused.iter().map(ToString::to_string).collect();
        assert_eq!(
            said[0],
            "metadata.labels.team: value no is written unquoted, and kubectl reads it as the \
             boolean false (YAML 1.1), where Katib's API and a Pod take text, so a cluster \
             refuses the experiment or its trials (Vernier reads the text no); hint: quote it, \
             as in \"no\""
        );
        assert!(
            said[3].contains("kubectl reads it as the number 1000"),
            "{}",
            said[3]
        );
        assert!(
            said[6].contains("kubectl reads it as the number 18"),
            "{}",
            said[6]
        );
        assert_eq!(
            found.renamed_keys[0].to_string(),
            "metadata.labels.on: key on is written unquoted, and kubectl sends it as the key \
             \"true\" (YAML 1.1), where Vernier reads on; hint: quote it, as in \"on\""
        );
    }

    #[test]
    fn words_with_underscores_or_leading_zeros_are_read_as_go_yaml_reads_numbers() {
        let table = [
            ("1_000", Some("1000")),
            ("0x_1F", Some("31")),
            ("0b1_0", Some("2")),
            ("0_22", Some("18")),
            ("-1_0", Some("-10")),
            ("1_0.5", Some("10.5")),
            ("_1", None),
            ("a_1", None),
            ("1_x", None),
            ("1000", None),
            ("010", Some("8")),
            ("-017", Some("-15")),
            ("09", Some("9")),
            ("0", None),
        ];
        for (word, want) in table {
            let got = match Reading::of(word) {
                Some(Reading::Number(n)) => Some(n),
                _ => None,
            };
            assert_eq!(got.as_deref(), want, "{word}");
        }
    }

    #[test]
    fn only_text_fields_are_named_with_keys_whole() {
        let yaml = r#"
kind: Experiment
metadata:
  labels: {app.kubernetes.io/managed: no}
spec:
  algorithm: {algorithmSettings: [{name: a, value: off}]}
  trialTemplate:
    primaryPodLabels: {job-role: y}
    trialSpec:
      spec:
        templates:
          - steps:
              - - arguments: {parameters: [{name: use-cache, value: no}]}
        template:
          metadata: {annotations: {sidecar.istio.io/inject: off}}
          spec:
            hostNetwork: no
            containers: [{name: c, env: [{name: E, value: on}]}]
"#;
        assert_eq!(
            paths(&kubectl_yaml11(yaml).refused),
            [
                "metadata.labels.app.kubernetes.io/managed",
                "spec.algorithm.algorithmSettings[0].value",
                "spec.trialTemplate.primaryPodLabels.job-role",
                "spec.trialTemplate.trialSpec.spec.template.metadata.annotations.sidecar.istio.io/inject",
                "spec.trialTemplate.trialSpec.spec.template.spec.containers[0].env[0].value",
            ]
        );
    }

    #[test]
    fn a_boolean_field_written_yes_gets_kubectls_reading_as_its_hint() {
        let table = [
            (
                "invalid type: string \"yes\", expected a boolean",
                Some(
                    "hint: write true: kubectl reads yes as true (YAML 1.1), Vernier's reader (YAML 1.2) reads it as text",
                ),
            ),
            (
                "invalid type: string \"Off\", expected a boolean at line 3",
                Some(
                    "hint: write false: kubectl reads Off as false (YAML 1.1), Vernier's reader (YAML 1.2) reads it as text",
                ),
            ),
            ("invalid type: string \"maybe\", expected a boolean", None),
            ("invalid type: string \"yes\", expected an integer", None),
        ];
        for (message, want) in table {
            assert_eq!(boolean_word_hint(message).as_deref(), want, "{message}");
        }
    }

    #[test]
    fn a_word_under_an_anchor_is_named_wherever_an_alias_repeats_it() {
        let yaml = r#"
kind: Experiment
spec:
  parameters:
    - name: a
      feasibleSpace: {list: &flags [&y yes, sgd]}
    - name: b
      feasibleSpace: {list: *flags}
    - name: c
      feasibleSpace: {list: [*y, adam]}
"#;
        assert_eq!(
            paths(&kubectl_yaml11(yaml).refused),
            [
                "spec.parameters[0].feasibleSpace.list[0]",
                "spec.parameters[1].feasibleSpace.list[0]",
                "spec.parameters[2].feasibleSpace.list[0]",
            ]
        );
    }

    #[test]
    fn only_the_experiment_document_is_read_and_a_broken_one_has_none() {
        let two = "kind: ConfigMap\ndata: {a: yes}\n---\nkind: Experiment\nspec: {name: on}\n";
        assert_eq!(paths(&kubectl_yaml11(two).refused), ["spec.name"]);
        assert_eq!(kubectl_yaml11("a: [yes"), Yaml11Readings::default());
    }
}
