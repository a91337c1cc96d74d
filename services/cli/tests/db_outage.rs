//! `vernier run` against a PostgreSQL server that stops answering while trials run and finish:
//! the run waits for it, says so, and records every trial and observation once it answers,
//! instead of ending the experiment with its trials unrecorded. The server is reached through
//! a proxy the test cuts (every connection dropped, new ones closed at once) and restores.
//! A server that stops answering without closing anything (paused, cut off by the network)
//! must not hold the run once the user presses Ctrl-C. Uses a database of its own on the server
//! in `VERNIER_TEST_POSTGRES_URL`; skips loudly where that is unset (fails instead under
//! `VERNIER_TEST_REQUIRE=1`).

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

fn spec(dir: &std::path::Path, lines: usize) -> String {
    let trial = dir.join("trial.py");
    std::fs::write(
        &trial,
        format!(
            "import sys, time\nfor i in range({lines}):\n    time.sleep(0.25)\n    print(f'loss={{float(sys.argv[1]) + i}}', flush=True)\n"
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

/// Forwards connections to `upstream` until `hung` turns true: then nothing more is passed
/// either way and new connections are held unanswered, as by a paused server.
async fn hanging_proxy(listener: TcpListener, upstream: SocketAddr, hung: watch::Receiver<bool>) {
    while let Ok((mut client, _)) = listener.accept().await {
        let mut hung = hung.clone();
        tokio::spawn(async move {
            let already = *hung.borrow();
            if already {
                std::future::pending::<()>().await;
            }
            let Ok(mut server) = TcpStream::connect(upstream).await else {
                return;
            };
            tokio::select! {
                _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                () = async { drop(hung.wait_for(|h| *h).await) } => {
                    std::future::pending::<()>().await
                }
            }
        });
    }
}

/// The url of `pg`'s database through a proxy on a free local port, and the listener.
async fn behind_a_proxy(server_url: &url::Url) -> (url::Url, TcpListener, SocketAddr) {
    let host = server_url.host_str().expect("the server url names a host");
    let upstream: SocketAddr =
        tokio::net::lookup_host(format!("{host}:{}", server_url.port().unwrap_or(5432)))
            .await
            .expect("the server's host resolves")
            .next()
            .expect("the server's host has an address");
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free local port");
    let port = listener.local_addr().expect("a bound listener").port();
    let mut via_proxy = server_url.clone();
    via_proxy.set_host(Some("127.0.0.1")).expect("a host");
    via_proxy.set_port(Some(port)).expect("a port");
    (via_proxy, listener, upstream)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_ends_a_run_whose_database_server_hangs() {
    let Some(mut pg) = support::PgDatabase::create(
        "ctrl_c_ends_a_run_whose_database_server_hangs",
        "vernier_hang",
    )
    .await
    else {
        return;
    };
    let (via_proxy, listener, upstream) = behind_a_proxy(&pg.url).await;
    let (hang, hung) = watch::channel(false);
    tokio::spawn(hanging_proxy(listener, upstream, hung));

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("outage.yaml"), spec(dir.path(), 400)).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_vernier"))
        .args(["run", "outage.yaml", "--db", via_proxy.as_str()])
        .current_dir(dir.path())
        .env_remove("VERNIER_DB")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap());
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(
        lines.by_ref().any(|l| l.unwrap().starts_with("started")),
        "no trial started"
    );
    hang.send(true).unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    // Not a timing test: only a guard against waiting forever, far above the bounded stop.
    let mut waited = Duration::ZERO;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if waited > Duration::from_secs(180) {
            child.kill().unwrap();
            panic!("the run still waits for its hung database 180 s after Ctrl-C");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        waited += Duration::from_millis(200);
    };
    let errors = err_reader.join().unwrap();
    assert_eq!(status.code(), Some(2), "{errors}");
    assert!(errors.contains("did not answer within"), "{errors}");
    assert!(errors.contains("the call was abandoned"), "{errors}");
    // What was recorded before the hang is still there, and the experiment can be resumed.
    let mut db = sqlx::PgConnection::connect(pg.url.as_str()).await.unwrap();
    let row =
        sqlx::query("SELECT phase, completed_us IS NULL FROM experiments WHERE name = 'outage'")
            .fetch_one(&mut db)
            .await
            .unwrap();
    let (phase, open): (String, bool) = (row.get(0), row.get(1));
    assert_eq!((phase.as_str(), open), ("Running", true), "{errors}");
    db.close().await.unwrap();
    pg.drop_it().await;
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
    let (via_proxy, listener, upstream) = behind_a_proxy(&server_url).await;
    let (cut, cut_rx) = watch::channel(false);
    tokio::spawn(proxy(listener, upstream, cut_rx));

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("outage.yaml"), spec(dir.path(), LINES)).unwrap();
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
