//! Local mode ignores a trial's container image, so a command written for the image (Katib's
//! `python3 /opt/pytorch-mnist/mnist.py`) fails on every trial with "No such file". This finds
//! such paths before the first trial, so `run` and `validate` can warn once instead; likewise
//! a program (`mpirun`, `./train.sh`) or an interpreter's script (`python3 train.py`) that this
//! machine does not have.

use std::path::Path;
use vernier_runner::LocalExperiment;

/// The warnings for `exp`'s first trial's command as this machine sees it, `None` when its
/// working directory, program and every path it names are here (or the command cannot be
/// rendered: `run` reports that itself).
pub fn check(exp: &LocalExperiment) -> Option<String> {
    let point = crate::first_point::first_point(&exp.space);
    let cmd = exp.command_for("path-check", &point).ok()?;
    // The checkpoint mount is made for each trial: local mode gives it the trial's own folder.
    let trial_dir = vernier_algorithms::checkpoint::trial_dir_setting(&exp.settings);
    let exists = |p: &Path| p.exists() || trial_dir.is_some_and(|d| p.starts_with(d));
    let paths = warning(&image_only_paths(
        &cmd.program,
        &cmd.args,
        &exp.paths.log_dir,
        exists,
    ));
    let primary_dir = exp.missing_working_dir("path-check", &point);
    let replica_dirs: Vec<String> = exp
        .missing_replica_working_dirs("path-check", &point)
        .into_iter()
        .filter(|(_, dir)| Some(dir) != primary_dir.as_ref())
        .map(|(replica, dir)| replica_working_dir_warning(&replica, &dir, &exp.paths.work_dir))
        .collect();
    let dir = primary_dir.map(|dir| working_dir_warning(&dir, &cmd.work_dir));
    let search = cmd
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_default();
    let reported = image_only_paths(&cmd.program, &cmd.args, &exp.paths.log_dir, exists);
    let program = missing_program(
        &cmd.program,
        &cmd.args,
        &cmd.work_dir,
        &search,
        Path::is_file,
    )
    .filter(|m| !reported.contains(&m.path))
    .map(|m| m.warning());
    let found: Vec<String> = [dir, program, paths]
        .into_iter()
        .flatten()
        .chain(replica_dirs)
        .collect();
    // Callers print the first with "warning: "; each further one gets its own.
    (!found.is_empty()).then(|| found.join("\nwarning: "))
}

/// A program (or the script an interpreter is to run) that this machine does not have.
#[derive(Debug, Clone, PartialEq)]
pub struct MissingProgram {
    /// As the command names it.
    pub path: String,
    /// Where it was looked for.
    pub looked_in: String,
}

impl MissingProgram {
    fn warning(&self) -> String {
        format!(
            "the trial command runs {:?}, which is not {}, so every trial would fail\nhint: local mode runs the command here and ignores the container image; install or copy it here, or change the command (a cluster's image may have it, so this is only a warning)",
            self.path, self.looked_in
        )
    }
}

/// Interpreters whose first argument that is not an option is the script they run.
const INTERPRETERS: &[&str] = &[
    "python", "python3", "python2", "sh", "bash", "zsh", "perl", "ruby", "node", "Rscript", "julia",
];

/// The program of a trial's command, or the script an interpreter in [`INTERPRETERS`] runs, when
/// this machine has no such file: a name without '/' looked up in `search` (a PATH value), a
/// relative path in `work_dir` (where the trial starts), an absolute path as it is. `is_file`
/// is the file test, so tables can stand in for the file system.
pub fn missing_program(
    program: &str,
    args: &[String],
    work_dir: &Path,
    search: &str,
    is_file: impl Fn(&Path) -> bool,
) -> Option<MissingProgram> {
    let missing = |path: &str, looked_in: String| {
        Some(MissingProgram {
            path: path.to_string(),
            looked_in,
        })
    };
    if !program.contains('/') {
        let on_path = std::env::split_paths(search).any(|dir| is_file(&dir.join(program)));
        if !on_path {
            return missing(program, "on PATH".to_string());
        }
    } else if !is_file(&work_dir.join(program)) {
        return missing(program, where_looked(program, work_dir));
    }
    let script = interpreted_script(program, args)?;
    let found = script_candidates(program, script)
        .iter()
        .any(|c| is_file(&work_dir.join(c)))
        || (shell_family(program)
            && !script.contains('/')
            && std::env::split_paths(search).any(|dir| is_file(&dir.join(script))));
    (!found).then(|| MissingProgram {
        path: script.to_string(),
        looked_in: where_looked(script, work_dir),
    })
}

/// The names an interpreter may open for `script`: node adds `.js`, `.mjs`, `.cjs` or `.json`
/// to a name without one; the others open the name as written (a directory counts: python
/// runs a package directory's `__main__.py`).
fn script_candidates(program: &str, script: &str) -> Vec<String> {
    let node = interpreter_name(program) == Some("node");
    let bare = Path::new(script).extension().is_none();
    let mut out = vec![script.to_string()];
    if node && bare {
        out.extend([".js", ".mjs", ".cjs", ".json"].map(|ext| format!("{script}{ext}")));
    }
    out
}

/// Whether `program` is a shell, which looks a script name without '/' up on PATH when the
/// working directory has no such file.
fn shell_family(program: &str) -> bool {
    matches!(interpreter_name(program), Some("sh" | "bash" | "zsh"))
}

fn interpreter_name(program: &str) -> Option<&str> {
    Path::new(program).file_name()?.to_str()
}

fn where_looked(path: &str, work_dir: &Path) -> String {
    if path.starts_with('/') {
        "on this machine".to_string()
    } else {
        format!("in the trial's working directory {}", work_dir.display())
    }
}

/// The script `program` runs when it is an interpreter given one: its first argument that is
/// not an option, unless an option first makes it run code (`-c`) or a module (`-m`, `-e`).
fn interpreted_script<'a>(program: &str, args: &'a [String]) -> Option<&'a str> {
    let name = Path::new(program).file_name()?.to_str()?;
    let versioned =
        name.starts_with("python") && name[6..].chars().all(|c| c.is_ascii_digit() || c == '.');
    if !INTERPRETERS.contains(&name) && !versioned {
        return None;
    }
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-" | "--" | "--eval" | "--print" | "-p" => return None,
            // Options whose value is the next argument (python's -W, -X; a shell's -o).
            "-W" | "-X" | "-o" => {
                args.next();
            }
            // Code (`-c`, `-e`) or a module (`-m`) to run, alone or in a cluster (`-uc`).
            a if runs_code(a) => return None,
            a if a.starts_with('-') => continue,
            a if a.contains(char::is_whitespace) || a.is_empty() => return None,
            a => return Some(a),
        }
    }
    None
}

/// A short-option cluster holding `c`, `e` or `m`: the interpreter runs code or a module
/// given as an argument, not a script file.
fn runs_code(arg: &str) -> bool {
    let Some(letters) = arg.strip_prefix('-').filter(|l| !l.starts_with('-')) else {
        return false;
    };
    letters.chars().all(|c| c.is_ascii_alphabetic()) && letters.contains(['c', 'e', 'm'])
}

fn replica_working_dir_warning(replica: &str, wanted: &str, used: &Path) -> String {
    format!(
        "the {replica} replicas' workingDir {wanted} does not exist on this machine, so they start in {}\nhint: create that directory here, or drop workingDir and use paths relative to the experiment file",
        used.display()
    )
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
    fn a_program_or_script_this_machine_lacks_is_found() {
        let files = [
            "/usr/bin/python3",
            "/usr/local/bin/sh",
            "/usr/bin/node",
            "/usr/bin/bash",
            "/w/train.py",
            "/w/run.sh",
            "/w/app.js",
            "/w/pkgdir",
            "/opt/tool",
            "/usr/local/bin/runme.sh",
        ];
        let is_file = |p: &Path| files.iter().any(|f| Path::new(f) == p);
        let search = "/usr/local/bin:/usr/bin";
        // (program, args, the missing path and where it was looked for; None: all present)
        type Case<'a> = (&'a str, &'a [&'a str], Option<(&'a str, &'a str)>);
        let cases: [Case; 20] = [
            ("python3", &["-uc", "print(1)"], None),
            ("python3", &["-um", "json.tool"], None),
            ("python3", &["-bb", "-E", "train.py"], None),
            ("python3", &["pkgdir"], None),
            ("node", &["app"], None),
            ("bash", &["runme.sh"], None),
            (
                "node",
                &["gone"],
                Some(("gone", "in the trial's working directory /w")),
            ),
            ("python3", &["train.py", "--lr=0.1"], None),
            ("python3", &["-u", "-W", "ignore", "train.py"], None),
            ("python3", &["-m", "pkg.train"], None),
            ("sh", &["-c", "missing.sh --x=1"], None),
            ("./run.sh", &[], None),
            ("/opt/tool", &["x"], None),
            ("mpirun", &["-n", "2", "t"], Some(("mpirun", "on PATH"))),
            (
                "/usr/bin/nonexistent-prog",
                &[],
                Some(("/usr/bin/nonexistent-prog", "on this machine")),
            ),
            (
                "./missing.sh",
                &[],
                Some(("./missing.sh", "in the trial's working directory /w")),
            ),
            (
                "python3",
                &["missing.py", "--lr=1"],
                Some(("missing.py", "in the trial's working directory /w")),
            ),
            (
                "/usr/bin/python3",
                &["-u", "/opt/m.py"],
                Some(("/opt/m.py", "on this machine")),
            ),
            ("python3.11", &["train.py"], Some(("python3.11", "on PATH"))),
            ("sh", &["run.sh"], None),
        ];
        for (program, args, want) in cases {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            let got = missing_program(program, &args, Path::new("/w"), search, is_file);
            let got = got
                .as_ref()
                .map(|m| (m.path.as_str(), m.looked_in.as_str()));
            assert_eq!(got, want, "{program} {args:?}");
        }
        let w = missing_program("mpirun", &[], Path::new("/w"), search, is_file)
            .unwrap()
            .warning();
        assert!(
            w.starts_with("the trial command runs \"mpirun\", which is not on PATH")
                && w.contains("\nhint: ")
                && w.contains("only a warning"),
            "{w}"
        );
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
