//! `vernier run` against a PostgreSQL server that stops answering while trials run and finish:
//! the run waits for it, says so, and records every trial and observation once it answers,
//! instead of ending the experiment with its trials unrecorded. The server is reached through
//! a proxy the test cuts (every connection dropped, new ones closed at once) and restores.
//! Uses a database of its own on the server in `VERNIER_TEST_POSTGRES_URL`; skips loudly where
//! that is unset (fails instead under `VERNIER_TEST_REQUIRE=1`).

mod support;

use sqlx::{Connection, Row};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

const TRIALS: usize = 4;
const LINES: usize = 6;

fn spec(dir: &std::path::Path) -> String {
    let trial = dir.join("trial.py");
    std::fs::write(
        &trial,
        format!(
            "import sys, time\nfor i in range({LINES}):\n    time.sleep(0.25)\n    print(f'loss={{float(sys.argv[1]) + i}}', flush=True)\n"
        ),
    )
    .expect("write the trial program");
    format!(
        r#"apiVersion: kubeflow.org/v1beta1
kind: Experiment
metadata:
  name: outage
spec:
  objective:
    type: minimize
    objectiveMetricName: loss
  algorithm:
    algorithmName: random
  parallelTrialCount: 2
  maxTrialCount: {TRIALS}
  parameters:
    - name: x
      parameterType: double
      feasibleSpace: {{min: "0", max: "1"}}
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
                command: ["python3", "{}", "${{trialParameters.x}}"]
            restartPolicy: Never
"#,
        trial.display()
    )
}

/// Forwards connections to `upstream` until `cut` turns true: then every open connection is
/// dropped and new ones are closed at once, until it turns false again.
async fn proxy(listener: TcpListener, upstream: SocketAddr, cut: watch::Receiver<bool>) {
    while let Ok((mut client, _)) = listener.accept().await {
        if *cut.borrow() {
            continue;
        }
        let mut cut = cut.clone();
        tokio::spawn(async move {
            let Ok(mut server) = TcpStream::connect(upstream).await else {
                return;
            };
            tokio::select! {
                _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                _ = cut.wait_for(|c| *c) => {}
            }
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waits_out_a_database_that_stops_answering_and_loses_nothing() {
    let Some(mut pg) = support::PgDatabase::create(
        "a_run_waits_out_a_database_that_stops_answering_and_loses_nothing",
        "vernier_outage",
    )
    .await
    else {
        return;
    };
    let server_url = pg.url.clone();
    let upstream: SocketAddr = tokio::net::lookup_host(format!(
        "{}:{}",
        server_url.host_str().unwrap(),
        server_url.port().unwrap_or(5432)
    ))
    .await
    .unwrap()
    .next()
    .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut via_proxy = server_url.clone();
    via_proxy.set_host(Some("127.0.0.1")).unwrap();
    via_proxy
        .set_port(Some(listener.local_addr().unwrap().port()))
        .unwrap();
    let (cut, cut_rx) = watch::channel(false);
    tokio::spawn(proxy(listener, upstream, cut_rx));

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("outage.yaml"), spec(dir.path())).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_vernier"))
        .args(["run", "outage.yaml", "--db", via_proxy.as_str()])
        .current_dir(dir.path())
        .env_remove("VERNIER_DB")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap());
    let mut lines = stdout.lines();
    let mut seen = String::new();
    // Cut once the first trials run; they finish (and print) while the server is away.
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push_str(&line);
        seen.push('\n');
        if line.starts_with("started") {
            break;
        }
    }
    cut.send(true).unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;
    cut.send(false).unwrap();
    for line in lines {
        seen.push_str(&line.unwrap());
        seen.push('\n');
    }
    let status = child.wait().unwrap();
    let errors = err_reader.join().unwrap();
    assert_eq!(status.code(), Some(0), "stdout:\n{seen}\nstderr:\n{errors}");
    assert!(
        errors.contains("does not answer")
            && errors.contains("the run waits for it")
            && errors.contains("`vernier resume NAME --db postgres://"),
        "{errors}"
    );
    assert!(errors.contains("the database answers again"), "{errors}");

    let mut db = sqlx::PgConnection::connect(server_url.as_str())
        .await
        .unwrap();
    let states: Vec<String> = sqlx::query("SELECT state FROM trials ORDER BY name")
        .fetch_all(&mut db)
        .await
        .unwrap()
        .iter()
        .map(|r| r.get::<String, _>(0))
        .collect();
    assert_eq!(states, vec!["Succeeded"; TRIALS], "{seen}");
    // A write cut off after the server committed it is sent again, so a value may be there
    // twice; none may be missing.
    let rows: i64 = sqlx::query(
        "SELECT COUNT(*) FROM (SELECT DISTINCT trial_name, metric_name, value FROM observation_logs) v",
    )
        .fetch_one(&mut db)
        .await
        .unwrap()
        .get(0);
    assert_eq!(rows, (TRIALS * LINES) as i64, "{seen}\n{errors}");
    db.close().await.unwrap();
    pg.drop_it().await;
}
