//! Kubernetes' `$(VAR)` expansion in a container's `env` values, `command` and `args`, which
//! the kubelet applies on a cluster, so a local run must apply it too for the trial to see the
//! same arguments. Written here because it is a dozen lines of the kubelet's rules
//! (`third_party/forked/golang/expansion`) that no crate reproduces exactly: `$$` is one `$`,
//! `$(NAME)` is the variable's value when it is defined and stays as written when it is not,
//! and any other `$` is left alone.

/// Expands `command` and `args` against the whole (already expanded) env, the later
/// definition of a name winning.
pub fn expand_words(env: &[(String, String)], command: &mut [String], args: &mut [String]) {
    for word in command.iter_mut().chain(args.iter_mut()) {
        *word = expand(word, |name| lookup(env, name));
    }
}

/// The value of the last definition of `name`: a later duplicate overrides an earlier one.
pub fn lookup<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter()
        .rev()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// One string with every `$(NAME)` that `value` knows replaced and every `$$` made `$`.
pub fn expand<'a>(input: &str, value: impl Fn(&str) -> Option<&'a str>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        match after.chars().next() {
            // A `$` that ends the string is kept.
            None => {
                out.push('$');
                rest = after;
            }
            Some('$') => {
                out.push('$');
                rest = &after[1..];
            }
            Some('(') => match after.find(')') {
                Some(close) => {
                    let name = &after[1..close];
                    match value(name) {
                        Some(v) => out.push_str(v),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &after[close + 1..];
                }
                // An unclosed reference is text; scanning goes on after its `(`.
                None => {
                    out.push_str("$(");
                    rest = &after[1..];
                }
            },
            // Any other character after `$` is kept with it, unexpanded.
            Some(c) => {
                out.push('$');
                out.push(c);
                rest = &after[c.len_utf8()..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::super::container::{ContainerSpec, container_from};
    use super::*;

    fn vars(name: &str) -> Option<&'static str> {
        match name {
            "LR" => Some("0.01"),
            "EMPTY" => Some(""),
            "DOLLAR" => Some("$(LR)"),
            _ => None,
        }
    }

    #[test]
    fn expansion_follows_the_kubelet_rules() {
        let table = [
            ("--lr=$(LR)", "--lr=0.01"),
            ("$(LR)$(LR)", "0.010.01"),
            ("--lit=$$(LR)", "--lit=$(LR)"),
            ("$$$(LR)", "$0.01"),
            ("$(UNDEFINED)", "$(UNDEFINED)"),
            ("x$(EMPTY)y", "xy"),
            ("$(DOLLAR)", "$(LR)"),
            ("$(LR", "$(LR"),
            ("$(LR $(LR)", "$(LR $(LR)"),
            ("$()", "$()"),
            ("$HOME ${LR} $", "$HOME ${LR} $"),
            ("a$é$(LR)", "a$é0.01"),
            ("echo $$ && $$$$", "echo $ && $$"),
            ("no dollar", "no dollar"),
        ];
        for (input, want) in table {
            assert_eq!(expand(input, vars), want, "{input}");
        }
    }

    fn container(env: serde_json::Value, command: &[&str], args: &[&str]) -> ContainerSpec {
        let c = serde_json::json!({"name": "main", "env": env, "command": command, "args": args});
        container_from(&c, "main", "c").unwrap()
    }

    #[test]
    fn env_values_see_only_earlier_variables_and_commands_see_all() {
        let env = serde_json::json!([
            {"name": "A", "value": "a=$(B)"},
            {"name": "B", "value": "b"},
            {"name": "C", "value": "$(B)-$(A)"},
        ]);
        let c = container(env, &["run", "$(C)"], &["--a=$(A)", "--pid=$$"]);
        let values: Vec<&str> = c.env.iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(values, ["a=$(B)", "b", "b-a=$(B)"]);
        assert_eq!(c.command, ["run", "b-a=$(B)"]);
        assert_eq!(c.args, ["--a=a=$(B)", "--pid=$"]);
    }

    #[test]
    fn a_later_definition_of_a_name_wins() {
        let env = serde_json::json!([
            {"name": "X", "value": "1"},
            {"name": "X", "value": "2"},
            {"name": "Y", "value": "$(X)"},
        ]);
        let c = container(env, &[], &["$(X)"]);
        assert_eq!(c.env[2].1, "2");
        assert_eq!(c.args, ["2"]);
    }
}
