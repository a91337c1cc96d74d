//! The binary's usage surface: help text lists every command, and usage errors exit 2.

use std::process::Command;

fn vernier(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_vernier"))
        .args(args)
        .env_remove("VERNIER_DB")
        .output()
        .expect("run vernier")
}

#[test]
fn help_lists_every_command() {
    let out = vernier(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for cmd in [
        "run", "resume", "list", "report", "delete", "validate", "enqueue",
    ] {
        assert!(
            help.contains(&format!("  {cmd} ")),
            "{cmd} missing from:\n{help}"
        );
    }
}

#[test]
fn completions_cover_every_command_in_each_shell_and_refuse_an_unknown_one() {
    for (shell, marker) in [
        ("bash", "complete -F _vernier"),
        ("zsh", "#compdef vernier"),
        ("fish", "complete -c vernier"),
    ] {
        let out = vernier(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(script.contains(marker), "{shell}: {script}");
        for cmd in ["run", "resume", "report", "dashboard", "completions"] {
            assert!(script.contains(cmd), "{shell} lacks {cmd}");
        }
    }
    let out = vernier(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("tcsh"));
}

#[test]
fn usage_errors_exit_2_and_name_the_flag() {
    let out = vernier(&["report", "x", "--format", "yaml"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--format") && err.contains("yaml"), "{err}");
    let out = vernier(&["run"]);
    assert_eq!(out.status.code(), Some(2));
    // A negative or fractional number reaches the flag's check, which says what would do.
    for (args, said) in [
        (
            ["run", "x.yaml", "--seed", "-3"],
            "'-3' for '--seed <SEED>': a seed is a whole number from 0",
        ),
        (
            ["run", "x.yaml", "--seed", "1.5"],
            "'1.5' for '--seed <SEED>': a seed is a whole number",
        ),
        (
            ["report", "x", "--top", "-1"],
            "'-1' for '--top <N>': the number of trials to show is a whole number, 1 or more",
        ),
        (["report", "x", "--top", "0"], "'0' for '--top <N>'"),
    ] {
        let out = vernier(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(said) && err.contains("hint:"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn kube_options_need_kube() {
    let out = vernier(&["report", "x", "--namespace", "team-a"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--kube"), "{err}");
    let out = vernier(&["compare", "x", "y", "--namespace", "team-a"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_database_in_a_missing_directory_is_a_clear_error() {
    let out = vernier(&["list", "--db", "/nonexistent-dir/sub/vernier.db"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent-dir/sub"), "{err}");
    assert!(err.contains("hint:"), "{err}");
}

#[test]
fn an_empty_database_url_names_where_it_came_from() {
    let out = Command::new(env!("CARGO_BIN_EXE_vernier"))
        .arg("list")
        .env("VERNIER_DB", "")
        .output()
        .expect("run vernier");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the database url from VERNIER_DB is empty") && err.contains("hint:"),
        "{err}"
    );
}

/// Exit code 2 and stderr, for a usage error that `vernier` meets before any database or
/// cluster is reached.
fn refused(out: std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    err
}

#[test]
fn compare_refuses_an_experiment_named_twice() {
    let err = refused(vernier(&["compare", "a", "a"]));
    assert!(
        err.contains("experiment \"a\" is named twice") && err.contains("hint:"),
        "{err}"
    );
}

#[test]
fn observations_from_a_cluster_are_refused_before_connecting() {
    let err = refused(vernier(&[
        "report",
        "e1",
        "--format",
        "observations",
        "--kube",
        "--kube-url",
        "http://127.0.0.1:1",
    ]));
    assert!(
        err.contains("--format observations reads the database")
            && err.contains("hint: drop --kube"),
        "{err}"
    );
}

#[test]
fn a_malformed_kube_url_is_quoted_with_an_example() {
    let err = refused(vernier(&[
        "report",
        "x",
        "--kube",
        "--kube-url",
        "http://[::1",
    ]));
    assert!(
        err.contains("--kube-url value \"http://[::1\"")
            && err.contains("hint: write it like http://127.0.0.1:8001"),
        "{err}"
    );
}

#[test]
fn a_missing_kubeconfig_is_named_with_the_ways_to_reach_a_cluster() {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_vernier"))
        .args(["report", "x", "--kube"])
        .env_remove("VERNIER_DB")
        .env_remove("VERNIER_KUBE_URL")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env("KUBECONFIG", "/nonexistent")
        .env("HOME", home.path())
        .output()
        .expect("run vernier");
    let err = refused(out);
    assert!(
        err.contains("kubernetes client configuration")
            && err.contains("/nonexistent")
            && err.contains("hint: set KUBECONFIG, run in a cluster, or pass --kube-url"),
        "{err}"
    );
}

#[test]
fn a_missing_database_from_vernier_db_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_vernier"))
        .arg("list")
        .env("VERNIER_DB", "nope.db")
        .current_dir(dir.path())
        .output()
        .expect("run vernier");
    let err = refused(out);
    assert!(
        err.contains("database `nope.db` does not exist (path from VERNIER_DB)")
            && err.contains("hint:"),
        "{err}"
    );
    assert!(!dir.path().join("nope.db").exists());
}
