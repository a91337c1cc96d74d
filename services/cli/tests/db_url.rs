//! `--db URL` / `VERNIER_DB` on every command that opens the store, against PostgreSQL: run an
//! experiment there, then list, report (every format), compare, resume and delete it. Uses a
//! database of its own on the server in `VERNIER_TEST_POSTGRES_URL` and drops it afterwards;
//! skips loudly where that is unset (fails instead under `VERNIER_TEST_REQUIRE=1`).

mod support;

use std::process::{Command, Output};

const SPEC: &str = r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: pg-cli
spec:
  objective:
    type: minimize
    objectiveMetricName: loss
    additionalMetricNames: [acc]
  algorithm:
    algorithmName: random
  parallelTrialCount: 2
  maxTrialCount: 4
  parameters:
    - name: x
      parameterType: double
      feasibleSpace: {min: "0", max: "1"}
  trialTemplate:
    primaryContainerName: main
    trialParameters:
      - name: x
        reference: x
    trialSpec:
      apiVersion: batch/v1
      kind: Job
      spec:
        template:
          spec:
            containers:
              - name: main
                image: none
                command: ["/usr/bin/printf", 'loss=%s\nloss=%s\nacc=0.5\n', "1.5", "${trialParameters.x}"]
            restartPolicy: Never
"#;

fn vernier(dir: &std::path::Path, args: &[&str], env_db: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_vernier"));
    c.args(args).current_dir(dir).env_remove("VERNIER_DB");
    if let Some(db) = env_db {
        c.env("VERNIER_DB", db);
    }
    c.output().expect("run vernier")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_store_command_works_against_postgres() {
    let Some(mut pg) =
        support::PgDatabase::create("every_store_command_works_against_postgres", "vernier_cli")
            .await
    else {
        return;
    };
    let db = pg.url.to_string();

    let dir = tempfile::tempdir().unwrap();
    let result = std::panic::catch_unwind(|| {
        std::fs::write(dir.path().join("exp.yaml"), SPEC).unwrap();
        let d = dir.path();
        ok(&vernier(
            d,
            &["--db", &db, "run", "exp.yaml", "--seed", "3"],
            None,
        ));
        assert!(
            !d.join("vernier.db").exists(),
            "nothing went to the default SQLite file"
        );
        let listed = ok(&vernier(d, &["list", "--db", &db], None));
        assert!(
            listed.contains("pg-cli") && listed.contains("Succeeded"),
            "{listed}"
        );
        // The flag after the subcommand, as in `vernier report NAME --db URL`.
        let json = ok(&vernier(
            d,
            &["report", "pg-cli", "--format", "json", "--db", &db],
            None,
        ));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let trials = v["trials"].as_array().unwrap();
        assert_eq!(trials.len(), 4);
        for t in trials {
            let m = &t["status"]["observation"]["metrics"];
            // loss min is the sampled x (< 1.5); latest is x; acc is 0.5.
            assert_eq!(m[0]["name"], "loss");
            assert_eq!(m[0]["max"], "1.5");
            assert_eq!(m[0]["min"], m[0]["latest"]);
            assert_eq!(m[1]["latest"], "0.5");
        }
        for format in ["table", "csv"] {
            let out = ok(&vernier(
                d,
                &["report", "pg-cli", "--format", format],
                Some(&db),
            ));
            assert!(out.contains("loss"), "{format}: {out}");
        }
        ok(&vernier(
            d,
            &[
                "report", "pg-cli", "--format", "html", "--output", "r.html", "--db", &db,
            ],
            None,
        ));
        let page = std::fs::read_to_string(d.join("r.html")).unwrap();
        assert_eq!(
            page.matches("class=\"curve").count(),
            4,
            "one learning curve per trial"
        );
        // `serve` names its database without the password, also one given as a parameter.
        let mut secret = url::Url::parse(&db).unwrap();
        secret.set_query(Some("password=hunter2"));
        let mut serve = Command::new(env!("CARGO_BIN_EXE_vernier"))
            .args(["serve", "--listen", "127.0.0.1:0", "--db", secret.as_str()])
            .current_dir(d)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(serve.stdout.take().unwrap()),
            &mut first,
        )
        .unwrap();
        let _ = serve.kill();
        let _ = serve.wait();
        assert!(
            first.contains("password=***") && !first.contains("hunter2"),
            "{first}"
        );
        let cmp = ok(&vernier(d, &["compare", "pg-cli", "--db", &db], None));
        assert!(cmp.contains("pg-cli"), "{cmp}");
        let resumed = vernier(d, &["resume", "pg-cli", "--db", &db], None);
        assert_eq!(resumed.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&resumed.stderr).contains("has already finished"));
        ok(&vernier(d, &["delete", "pg-cli", "--db", &db], None));
        let gone = vernier(d, &["report", "pg-cli", "--db", &db], None);
        assert_eq!(gone.status.code(), Some(2));
    });
    pg.drop_it().await;
    if let Err(p) = result {
        std::panic::resume_unwind(p);
    }
}

#[test]
fn an_unreachable_server_is_named_without_its_password() {
    let dir = tempfile::tempdir().unwrap();
    let out = vernier(
        dir.path(),
        &[
            "list",
            "--db",
            "postgres://vernier:hunter2@127.0.0.1:1/vernier",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("postgres://vernier:***@127.0.0.1:1/vernier"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");
    assert!(err.contains("hint:"), "{err}");
}
