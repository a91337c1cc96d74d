//! Kubernetes' `$(VAR)` expansion in a container's `env` values, `command` and `args`, which
//! the kubelet applies on a cluster, so a local run must apply it too for the trial to see the
//! same arguments. Written here because it is a dozen lines of the kubelet's rules
//! (`third_party/forked/golang/expansion`) that no crate reproduces exactly: `$$` is one `$`,
//! `$(NAME)` is the variable's value when it is defined and stays as written when it is not,
//! and any other `$` is left alone.

/// Expands each env value against the variables listed before it, as the kubelet does, then
/// `command` and `args` against the whole expanded env.
pub fn expand_container(env: &mut [(String, String)], command: &mut [String], args: &mut [String]) {
    for i in 0..env.len() {
        let (earlier, rest) = env.split_at_mut(i);
        let value = &mut rest[0].1;
        *value = expand(value, |name| lookup(earlier, name));
    }
    expand_words(env, command, args);
}

/// Expands `command` and `args` against the whole (already expanded) env, the later
/// definition of a name winning.
pub fn expand_words(env: &[(String, String)], command: &mut [String], args: &mut [String]) {
    for word in command.iter_mut().chain(args.iter_mut()) {
        *word = expand(word, |name| lookup(env, name));
    }
}

/// The value of the last definition of `name`: a later duplicate overrides an earlier one.
fn lookup<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
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

    #[test]
    fn env_values_see_only_earlier_variables_and_commands_see_all() {
        let mut env = vec![
            ("A".to_string(), "a=$(B)".to_string()),
            ("B".to_string(), "b".to_string()),
            ("C".to_string(), "$(B)-$(A)".to_string()),
        ];
        let mut command = vec!["run".to_string(), "$(C)".to_string()];
        let mut args = vec!["--a=$(A)".to_string(), "--pid=$$".to_string()];
        expand_container(&mut env, &mut command, &mut args);
        let values: Vec<&str> = env.iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(values, ["a=$(B)", "b", "b-a=$(B)"]);
        assert_eq!(command, ["run", "b-a=$(B)"]);
        assert_eq!(args, ["--a=a=$(B)", "--pid=$"]);
    }

    #[test]
    fn a_later_definition_of_a_name_wins() {
        let mut env = vec![
            ("X".to_string(), "1".to_string()),
            ("X".to_string(), "2".to_string()),
            ("Y".to_string(), "$(X)".to_string()),
        ];
        let mut args = vec!["$(X)".to_string()];
        expand_container(&mut env, &mut [], &mut args);
        assert_eq!(env[2].1, "2");
        assert_eq!(args, ["2"]);
    }
}
