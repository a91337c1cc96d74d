//! Plain words that kubectl reads as booleans (`yes`, `off`, `n`): Vernier's YAML reader
//! follows YAML 1.2, where they are text, but kubectl converts a file to JSON with YAML 1.1's
//! rules, so `list: [yes, no]` reaches the API server as `[true, false]` and a parameter named
//! `n` as `false`. Katib's API takes text there and refuses the experiment (inside the trial
//! template a Pod does); these are said as warnings, like numbers written in text fields
//! (`unquoted`), so a spec that runs on a laptop is not thought ready for the cluster.
//!
//! The scalar's style (plain or quoted) is only in the parser's events, not in a
//! deserialized value, hence `saphyr-parser` beside the deserializer.

use crate::error::SpecError;
use saphyr_parser::{Event, Parser, ScalarStyle};

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

/// Each plain key or value of the experiment document in `text` that kubectl would send as a
/// boolean, with the fix. A document that does not parse has none (its parse error is
/// reported elsewhere).
pub fn kubectl_booleans(text: &str) -> Vec<SpecError> {
    let Ok(document) = crate::parse::experiment_document(text) else {
        return Vec::new();
    };
    let mut walk = Walk::default();
    for event in Parser::new_from_str(&document) {
        let Ok((event, _)) = event else {
            return Vec::new();
        };
        walk.step(event);
    }
    walk.found
}

/// Where the walk is in the document: one frame per open mapping or sequence.
#[derive(Default)]
struct Walk {
    frames: Vec<Frame>,
    found: Vec<SpecError>,
}

enum Frame {
    /// A mapping, with the key whose value comes next (`None` while a key is awaited).
    Mapping(Option<String>),
    /// A sequence, with the index of the next item.
    Sequence(usize),
}

impl Walk {
    fn step(&mut self, event: Event<'_>) {
        match event {
            Event::Scalar(text, style, _, tag) => {
                let read_as = (style == ScalarStyle::Plain && tag.is_none())
                    .then(|| boolean_of(&text))
                    .flatten();
                if let Some(b) = read_as {
                    let what = if self.awaits_key() { "key" } else { "value" };
                    self.found
                        .push(warning(&self.path_to(&text), what, &text, b));
                }
                self.node_done(Some(&text));
            }
            Event::Alias(_) => self.node_done(None),
            Event::MappingStart(..) => self.frames.push(Frame::Mapping(None)),
            Event::SequenceStart(..) => self.frames.push(Frame::Sequence(0)),
            Event::MappingEnd | Event::SequenceEnd => {
                self.frames.pop();
                self.node_done(None);
            }
            _ => {}
        }
    }

    fn awaits_key(&self) -> bool {
        matches!(self.frames.last(), Some(Frame::Mapping(None)))
    }

    /// The path of the node being read; for a key, the key itself is its last part.
    fn path_to(&self, scalar: &str) -> String {
        let mut path = String::new();
        for frame in &self.frames {
            match frame {
                Frame::Mapping(Some(key)) => push_key(&mut path, key),
                Frame::Mapping(None) => push_key(&mut path, scalar),
                Frame::Sequence(i) => path.push_str(&format!("[{i}]")),
            }
        }
        path
    }

    /// A node ended (a scalar, an alias or a whole collection): in a mapping it was the key
    /// (`key` is its text, when it has one) or the value; in a sequence, an item.
    fn node_done(&mut self, key: Option<&str>) {
        match self.frames.last_mut() {
            Some(Frame::Mapping(slot @ None)) => *slot = Some(key.unwrap_or("?").to_string()),
            Some(Frame::Mapping(slot)) => *slot = None,
            Some(Frame::Sequence(i)) => *i += 1,
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

fn boolean_of(word: &str) -> Option<bool> {
    YAML11_ONLY_BOOLEANS
        .iter()
        .find(|(w, _)| *w == word)
        .map(|&(_, b)| b)
}

fn warning(path: &str, what: &str, word: &str, read_as: bool) -> SpecError {
    SpecError::new(
        path,
        format!(
            "{what} {word} is written unquoted, and kubectl reads it as the boolean {read_as} \
             (YAML 1.1), where Katib's API and a Pod take text, so a cluster refuses the \
             experiment or its trials (Vernier reads the text {word}); hint: quote it, as in \
             \"{word}\""
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_yaml11_booleans_are_named_where_they_are() {
        let yaml = r#"
apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata: {name: e, labels: {on: "x"}}
spec:
  objective: {type: minimize, objectiveMetricName: loss}
  parameters:
    - name: n
      parameterType: categorical
      feasibleSpace: {list: [yes, "no", 'off', sgd, true]}
  trialTemplate:
    trialParameters: [{name: n, reference: n}]
    trialSpec:
      spec:
        template:
          spec:
            containers:
              - name: t
                args:
                  - |
                    yes
                  - !!str off
                  - OFF
"#;
        let found: Vec<(String, String)> = kubectl_booleans(yaml)
            .iter()
            .map(|e| (e.path(), e.to_string()))
            .collect();
        let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "metadata.labels.on",
                "spec.parameters[0].name",
                "spec.parameters[0].feasibleSpace.list[0]",
                "spec.trialTemplate.trialParameters[0].name",
                "spec.trialTemplate.trialParameters[0].reference",
                "spec.trialTemplate.trialSpec.spec.template.spec.containers[0].args[2]",
            ]
        );
        assert_eq!(
            found[0].1,
            "metadata.labels.on: key on is written unquoted, and kubectl reads it as the boolean \
             true (YAML 1.1), where Katib's API and a Pod take text, so a cluster refuses the \
             experiment or its trials (Vernier reads the text on); hint: quote it, as in \"on\""
        );
        assert!(
            found[1].1.contains("value n is written unquoted"),
            "{}",
            found[1].1
        );
        assert!(found[1].1.contains("the boolean false"), "{}", found[1].1);
    }

    #[test]
    fn only_the_experiment_document_is_read_and_a_broken_one_has_none() {
        let two = "kind: ConfigMap\ndata: {a: yes}\n---\nkind: Experiment\nspec: {x: on}\n";
        let paths: Vec<String> = kubectl_booleans(two).iter().map(SpecError::path).collect();
        assert_eq!(paths, ["spec.x"]);
        assert!(kubectl_booleans("a: [yes").is_empty());
    }
}
