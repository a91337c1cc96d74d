//! The two small languages inside a trial template: a trial parameter's `reference` (a search
//! parameter name or a `${trialSpec.X}` meta reference) and `${trialParameters.x}` placeholders.

/// What a `trialParameters[].reference` points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// A name in `spec.parameters`; replaced by the trial's assigned value.
    Parameter(String),
    /// `${trialSpec.Name}`: the trial's name.
    Name,
    /// `${trialSpec.Namespace}`: the experiment's namespace.
    Namespace,
    /// `${trialSpec.Kind}` of the template.
    Kind,
    /// `${trialSpec.APIVersion}` of the template.
    ApiVersion,
    /// `${trialSpec.Labels[key]}` from the template's own metadata.
    Label(String),
    /// `${trialSpec.Annotations[key]}` from the template's own metadata.
    Annotation(String),
}

const META_PREFIX: &str = "${trialSpec.";
const PLACEHOLDER_PREFIX: &str = "${trialParameters.";

impl Reference {
    /// Reads a reference; the error says why a `${trialSpec.…}` form is not understood. As
    /// Katib's unanchored `\$\{trialSpec\.(.+?)\}` finds it, the first `${trialSpec.X}` in the
    /// text is the reference, and text around it is dropped (`${trialSpec.Name}-x` is the
    /// trial's name).
    pub fn parse(reference: &str) -> Result<Reference, String> {
        let Some(start) = reference.find(META_PREFIX) else {
            return Ok(Reference::Parameter(reference.to_string()));
        };
        let rest = &reference[start + META_PREFIX.len()..];
        let Some(key) = rest
            .find('}')
            .map(|end| &rest[..end])
            .filter(|k| !k.is_empty())
        else {
            return Err("a meta reference must end with '}'".into());
        };
        let bracketed = |prefix: &str| {
            key.strip_prefix(prefix)
                .and_then(|k| k.strip_suffix(']'))
                .filter(|k| !k.is_empty())
                .map(str::to_string)
        };
        match key {
            "Name" => Ok(Reference::Name),
            "Namespace" => Ok(Reference::Namespace),
            "Kind" => Ok(Reference::Kind),
            "APIVersion" => Ok(Reference::ApiVersion),
            _ => bracketed("Labels[")
                .map(Reference::Label)
                .or_else(|| bracketed("Annotations[").map(Reference::Annotation))
                .ok_or_else(|| {
                    "unknown meta reference; hint: use ${trialSpec.Name}, ${trialSpec.Namespace}, \
                     ${trialSpec.Kind}, ${trialSpec.APIVersion}, ${trialSpec.Labels[key]} or \
                     ${trialSpec.Annotations[key]}"
                        .to_string()
                }),
        }
    }
}

/// The text that a trial parameter named `name` is written as in a template.
pub fn placeholder(name: &str) -> String {
    format!("{PLACEHOLDER_PREFIX}{name}}}")
}

/// Names of every `${trialParameters.x}` in `text`, in order, repeats included.
pub fn placeholder_names(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(PLACEHOLDER_PREFIX) {
        let after = &rest[start + PLACEHOLDER_PREFIX.len()..];
        match after.find('}') {
            Some(end) => {
                names.push(&after[..end]);
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    names
}

/// Replaces every `${trialParameters.x}` in `text` by `value(x)` in a single left-to-right pass;
/// the error is the first name `value` does not know.
pub fn substitute<'v>(
    text: &str,
    value: impl Fn(&str) -> Option<&'v str>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(PLACEHOLDER_PREFIX) {
        let after = &rest[start + PLACEHOLDER_PREFIX.len()..];
        let Some(end) = after.find('}') else {
            break;
        };
        let name = &after[..end];
        out.push_str(&rest[..start]);
        out.push_str(value(name).ok_or_else(|| name.to_string())?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_references() {
        assert_eq!(
            Reference::parse("lr").unwrap(),
            Reference::Parameter("lr".into())
        );
        assert_eq!(
            Reference::parse("${trialSpec.Name}").unwrap(),
            Reference::Name
        );
        assert_eq!(
            Reference::parse("${trialSpec.Labels[app]}").unwrap(),
            Reference::Label("app".into())
        );
        assert!(Reference::parse("${trialSpec.Foo}").is_err());
        assert!(Reference::parse("${trialSpec.Labels[]}").is_err());
        // Katib's unanchored pattern: text around the first meta reference is dropped.
        for around in [
            "${trialSpec.Name}x",
            "run-${trialSpec.Name}",
            "a${trialSpec.Name}}b",
        ] {
            assert_eq!(
                Reference::parse(around).unwrap(),
                Reference::Name,
                "{around}"
            );
        }
        assert_eq!(
            Reference::parse("${trialSpec.Kind}${trialSpec.Name}").unwrap(),
            Reference::Kind
        );
        for unclosed in ["${trialSpec.Name", "${trialSpec.}"] {
            assert!(Reference::parse(unclosed).is_err(), "{unclosed}");
        }
    }

    #[test]
    fn finds_placeholders() {
        let text =
            r#"["--lr=${trialParameters.lr}", "${trialParameters.m}x${trialParameters.lr}"]"#;
        assert_eq!(placeholder_names(text), vec!["lr", "m", "lr"]);
        assert_eq!(placeholder("lr"), "${trialParameters.lr}");
    }

    #[test]
    fn substitutes_in_one_pass() {
        let look = |n: &str| match n {
            "a" => Some("${trialParameters.b}"),
            "b" => Some("B"),
            _ => None,
        };
        assert_eq!(
            substitute("x=${trialParameters.a} y=${trialParameters.b} ${tail", look).unwrap(),
            "x=${trialParameters.b} y=B ${tail"
        );
        assert_eq!(substitute("${trialParameters.c}", look).unwrap_err(), "c");
    }
}
