//! Local mode ignores a trial's container image, so a command written for the image (Katib's
//! `python3 /opt/pytorch-mnist/mnist.py`) fails on every trial with "No such file". This finds
//! such paths before the first trial, so `run` and `validate` can warn once instead.

use std::path::Path;
use vernier_runner::LocalExperiment;

/// The warning for `exp`'s first trial's command as this machine sees it, `None` when every
/// path it names is here (or the command cannot be rendered: `run` reports that itself).
pub fn check(exp: &LocalExperiment) -> Option<String> {
    let point = crate::first_point::first_point(&exp.space);
    let cmd = exp.command_for("path-check", &point).ok()?;
    let paths = warning(&image_only_paths(
        &cmd.program,
        &cmd.args,
        &exp.paths.log_dir,
        Path::exists,
    ));
    let dir = exp
        .missing_working_dir("path-check", &point)
        .map(|dir| working_dir_warning(&dir, &cmd.work_dir));
    match (paths, dir) {
        (Some(p), Some(d)) => Some(format!("{d}\n{p}")),
        (p, d) => p.or(d),
    }
}

fn working_dir_warning(wanted: &str, used: &Path) -> String {
    format!(
        "the primary container's workingDir {wanted} does not exist on this machine, so trials start in {}\nhint: create that directory here, or drop workingDir and use paths relative to the experiment file",
        used.display()
    )
}

/// The absolute paths in a trial's command (the program, each argument, and each word of a
/// shell script passed as an argument) that `exists` says are missing and whose parent
/// directory is missing too: a file the image ships, not an output the trial will create in
/// an existing directory. `skip` is a directory the runner creates itself (the trial logs),
/// whose paths are never reported. Each path once, in command order.
pub fn image_only_paths(
    program: &str,
    args: &[String],
    skip: &Path,
    exists: impl Fn(&Path) -> bool,
) -> Vec<String> {
    let words = std::iter::once(program)
        .chain(args.iter().map(String::as_str))
        .flat_map(|a| a.split(|c: char| c.is_whitespace() || "'\";|&()".contains(c)));
    let mut out: Vec<String> = Vec::new();
    for word in words {
        let path = Path::new(word);
        if !word.starts_with('/') || path.starts_with(skip) || out.iter().any(|o| o == word) {
            continue;
        }
        let parent_missing = path.parent().is_some_and(|p| !exists(p));
        if !exists(path) && parent_missing {
            out.push(word.to_string());
        }
    }
    out
}

/// The warning for the paths [`image_only_paths`] found, `None` when there are none.
pub fn warning(paths: &[String]) -> Option<String> {
    if paths.is_empty() {
        return None;
    }
    let what = if paths.len() == 1 {
        "a path that does"
    } else {
        "paths that do"
    };
    Some(format!(
        "the trial command names {what} not exist on this machine: {}\nhint: local mode runs the command here and ignores the container image; copy the files here or change the command to a local path (e.g. a script next to the experiment file)",
        paths.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_only_paths_are_found_and_outputs_in_existing_directories_are_not() {
        let present = ["/usr/bin/python3", "/tmp", "/usr/bin", "/", "/data"];
        let exists = |p: &Path| present.iter().any(|e| Path::new(e) == p);
        let logs = Path::new("/home/u/vernier-logs/exp");
        // (program, args, missing paths reported)
        type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str]);
        let cases: [Case; 8] = [
            ("python3", &["train.py", "--lr=0.1"], &[]),
            (
                "python3",
                &["/opt/pytorch-mnist/mnist.py", "--epochs=1"],
                &["/opt/pytorch-mnist/mnist.py"],
            ),
            ("/usr/bin/python3", &["/tmp/out.json"], &[]),
            ("/opt/conda/bin/python", &[], &["/opt/conda/bin/python"]),
            (
                "sh",
                &[
                    "-c",
                    "python3 /opt/trainer/train.py --x=1 && cat '/opt/trainer/done'",
                ],
                &["/opt/trainer/train.py", "/opt/trainer/done"],
            ),
            ("python3", &["/opt/a.py", "/opt/a.py"], &["/opt/a.py"]),
            (
                "python3",
                &["/home/u/vernier-logs/exp/t-1/metrics.log"],
                &[],
            ),
            ("python3", &["/data/out.csv"], &[]),
        ];
        for (program, args, want) in cases {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            assert_eq!(
                image_only_paths(program, &args, logs, exists),
                want.to_vec(),
                "{program} {args:?}"
            );
        }
    }

    #[test]
    fn the_warning_names_every_path_and_says_why() {
        assert_eq!(warning(&[]), None);
        let one = warning(&["/opt/a.py".into()]).unwrap();
        assert!(
            one.starts_with(
                "the trial command names a path that does not exist on this machine: /opt/a.py\n"
            ),
            "{one}"
        );
        assert!(one.contains("ignores the container image"));
        let two = warning(&["/opt/a.py".into(), "/opt/b".into()]).unwrap();
        assert!(two.contains("paths that do not exist on this machine: /opt/a.py, /opt/b"));
    }
}
