//! `vernier report NAME`: the experiment as a table, Katib-shaped JSON, CSV or an HTML page,
//! to stdout or a file, once or (`--watch`) rewritten until the experiment ends; read from
//! the database, or (`--kube`) from a cluster's Experiment and Trial objects.

use crate::Exit;
use crate::out::{errln, out};
use anyhow::{Context, bail};
use std::io::IsTerminal;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;
use vernier_report::analysis::phase_is_final;
use vernier_report::html::{HtmlOptions, REFRESH_SECONDS};
use vernier_report::table::TableOptions;
use vernier_report::{
    ExperimentReport, ReportError, csv, html, load, load_curves_keeping, observation_csv, table,
};

/// The formats of `vernier report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
    Html,
    /// Every value every trial reported, a CSV row each: trial, metric, step, time, value.
    Observations,
}

impl Format {
    /// A file name to suggest for `--output` in this format.
    fn example_file(self) -> &'static str {
        match self {
            Format::Table => "report.txt",
            Format::Json => "report.json",
            Format::Csv => "report.csv",
            Format::Html => "report.html",
            Format::Observations => "observations.csv",
        }
    }
}

/// Where reports are read from instead of the database (`report` and `compare`).
#[derive(Debug, Clone, clap::Args)]
pub struct KubeArgs {
    /// Read the Experiment and Trial objects of a cluster (as `vernier operator` writes them)
    /// instead of the database; they keep only reduced metrics, so no learning curves.
    #[arg(long)]
    pub kube: bool,
    /// The namespace of the experiments (with --kube).
    #[arg(long, requires = "kube", default_value = "default", value_name = "NS")]
    pub namespace: String,
    /// Kubernetes API URL without credentials (e.g. `kubectl proxy`'s), with --kube; default:
    /// kubeconfig or in-cluster.
    // Not `requires = "kube"`: the variable is shared with `vernier operator`, and having it
    // set must not break reports from the database.
    #[arg(long, env = "VERNIER_KUBE_URL", value_name = "URL")]
    pub kube_url: Option<String>,
}

/// A reader's SQLite file deleted or replaced since it was opened.
#[derive(Debug, thiserror::Error)]
#[error(
    "database `{path}` was {what} after it was opened, so what it held is not shown as current\nhint: run the command again to read the file that is at `{path}` now"
)]
pub struct DatabaseMoved {
    path: String,
    what: &'static str,
}

impl DatabaseMoved {
    /// The same news for a server that reads whatever file is put at the path next (the
    /// dashboard), where running the command again is no remedy.
    pub fn while_served(&self) -> anyhow::Error {
        let at = std::path::absolute(&self.path).unwrap_or_else(|_| PathBuf::from(&self.path));
        anyhow::anyhow!(
            "database `{}` was {} after it was opened, so what it held is not shown as current\nhint: a database put at {} is read from then on, without a restart (a `vernier run` there, or a copy put back)",
            self.path,
            self.what,
            at.display()
        )
    }
}

/// An opened report source.
pub enum Source {
    /// A database, and the `--db` flag that names it again in a hint (empty for the default).
    Db(vernier_store::SqlStore, String),
    Kube {
        client: vernier_operator::client::Client,
        namespace: String,
    },
}

impl Source {
    pub async fn open(db: &str, kube: &KubeArgs) -> anyhow::Result<Source> {
        Ok(if kube.kube {
            Source::Kube {
                client: vernier_operator::client::connect(kube.kube_url.as_deref()).await?,
                namespace: kube.namespace.clone(),
            }
        } else {
            let store = crate::db::open(db, vernier_store::OpenMode::ReadOnly).await?;
            Source::Db(store, crate::db::db_flag(db))
        })
    }

    /// Fails with [`DatabaseMoved`] when the SQLite file read is no longer at its path: the
    /// open handle would go on reading the deleted or replaced file as if it were current.
    fn in_place(&self) -> anyhow::Result<()> {
        let Source::Db(store, _) = self else {
            return Ok(());
        };
        match store.check_in_place() {
            Err(vernier_store::StoreError::DatabaseFileGone { path, what }) => {
                Err(DatabaseMoved { path, what }.into())
            }
            other => Ok(other?),
        }
    }

    /// `None` while the file read is in place; else the source opened again on the file now at
    /// `db`'s path (a new run after a deletion, a restored copy), said on stderr; else the
    /// [`DatabaseMoved`] error, when no database is there.
    pub async fn reopened_if_moved(
        &self,
        db: &str,
        kube: &KubeArgs,
    ) -> anyhow::Result<Option<Source>> {
        let Err(moved) = self.in_place() else {
            return Ok(None);
        };
        let Some(DatabaseMoved { path, what }) = moved.downcast_ref::<DatabaseMoved>() else {
            return Err(moved);
        };
        let fresh = match Source::open(db, kube).await {
            Ok(fresh) => fresh,
            Err(_) if !std::path::Path::new(path).exists() => return Err(moved),
            // What is there now is what the user has to fix.
            Err(e) => {
                return Err(e.context(format!(
                    "database `{path}` was {what} after it was opened, and the file now at that \
                     path cannot be read"
                )));
            }
        };
        errln!(
            "note: database `{path}` was {what} after it was opened; reading the file now at that path"
        );
        Ok(Some(fresh))
    }

    /// The report of `name`, with the learning curves of its `curves` best trials when the
    /// source has them (0 for none), and whether its driver is gone.
    pub async fn load(&self, name: &str, curves: usize) -> anyhow::Result<ExperimentReport> {
        self.load_after(name, curves, None).await
    }

    /// [`Source::load`], keeping the curves of the trials that had ended in `earlier` (see
    /// [`vernier_report::load_curves_keeping`]).
    pub async fn load_after(
        &self,
        name: &str,
        curves: usize,
        earlier: Option<&ExperimentReport>,
    ) -> anyhow::Result<ExperimentReport> {
        Ok(match self {
            Source::Db(store, db_flag) => {
                let mut report = load(store, name).await?;
                if curves > 0 {
                    load_curves_keeping(store, &mut report, curves, earlier).await?;
                }
                report.unattended = crate::db::unattended(store, &report.row).await?;
                report.resume_flags = db_flag.clone();
                report
            }
            Source::Kube { client, namespace } => {
                vernier_operator::report_source::load_report(client, namespace, name).await?
            }
        })
    }
}

#[derive(Debug)]
pub struct ReportArgs {
    pub name: String,
    pub format: Format,
    pub top: Option<usize>,
    pub output: Option<PathBuf>,
    pub watch: bool,
}

pub async fn report(db: &str, kube: &KubeArgs, args: ReportArgs) -> anyhow::Result<Exit> {
    check(&args, db, kube)?;
    if args.format == Format::Observations {
        return observations(db, &args).await;
    }
    let mut source = Source::open(db, kube).await?;
    let mut said = WatchNotes::default();
    let curves = if args.format == Format::Html {
        html::MAX_CURVES
    } else {
        0
    };
    loop {
        if args.watch {
            source = watched_source(source, db, kube, &args).await?;
        }
        let Some(report) = load_watched(&source, &args, curves, &mut said).await? else {
            tokio::time::sleep(Duration::from_secs(REFRESH_SECONDS.into())).await;
            continue;
        };
        let text = render(&report, &args)?;
        match &args.output {
            Some(path) => write_atomically(path, &text, args.format.example_file())?,
            None => out!("{text}"),
        }
        if args.watch {
            said.writing(&args, &report);
            said.unattended(&report);
        }
        let phase = report.row.status.phase.as_str();
        if !args.watch || phase_is_final(phase) {
            if args.watch {
                errln!(
                    "experiment {} is {phase}; {} is final",
                    args.name,
                    args.output.as_deref().unwrap_or(Path::new("-")).display()
                );
            }
            return Ok(match phase {
                "Failed" => Exit::Failed,
                _ => Exit::Succeeded,
            });
        }
        tokio::time::sleep(Duration::from_secs(REFRESH_SECONDS.into())).await;
    }
}

/// The watched database, opened again when its file was replaced; when it was deleted, the
/// page says so before the error ends the watch.
async fn watched_source(
    source: Source,
    db: &str,
    kube: &KubeArgs,
    args: &ReportArgs,
) -> anyhow::Result<Source> {
    match source.reopened_if_moved(db, kube).await {
        Ok(None) => Ok(source),
        Ok(Some(fresh)) => Ok(fresh),
        Err(e) => {
            if let Some(path) = &args.output
                && e.downcast_ref::<DatabaseMoved>().is_some()
            {
                let why = "The database file it was read from was deleted";
                write_atomically(path, &gone_page(&args.name, why), "report.html")?;
            }
            Err(e)
        }
    }
}

/// The experiment's report; `None` while a watched experiment does not exist yet (its page
/// then says it waits), and an error once a watched experiment is deleted.
async fn load_watched(
    source: &Source,
    args: &ReportArgs,
    curves: usize,
    said: &mut WatchNotes,
) -> anyhow::Result<Option<ExperimentReport>> {
    match source.load(&args.name, curves).await {
        Ok(r) => Ok(Some(r)),
        Err(e) if args.watch && is_not_found(&e) && said.trials.is_some() => {
            // It existed a moment ago: deleted while watched, it will not come back.
            if let Some(path) = &args.output {
                write_atomically(
                    path,
                    &gone_page(&args.name, "Experiment {name} was deleted"),
                    "report.html",
                )?;
            }
            anyhow::bail!(
                "experiment {} was deleted while it was watched{}",
                args.name,
                args.output
                    .as_deref()
                    .map(|p| format!("; {} says so", p.display()))
                    .unwrap_or_default()
            );
        }
        Err(e) if args.watch && is_not_found(&e) => {
            if !said.waiting
                && let Some(path) = &args.output
            {
                // A page to open now, and an unwritable path named now, not after the run.
                write_atomically(path, &waiting_page(&args.name), "report.html")?;
            }
            said.waiting(&args.name);
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// What a watched page shows until its experiment exists: it reloads itself like the report.
fn waiting_page(name: &str) -> String {
    let name = vernier_report::svg::esc(name);
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" content=\"{REFRESH_SECONDS}\"><title>{name}</title></head>\n<body><p>Waiting for experiment {name} to start.</p></body></html>\n"
    )
}

/// What a watched page shows once its experiment or database is gone: no reload, nothing to
/// wait for. `why` is the sentence, with `{name}` standing for the experiment's name.
fn gone_page(name: &str, why: &str) -> String {
    let name = vernier_report::svg::esc(name);
    let why = why.replace("{name}", &name);
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{name}</title></head>\n<body><p>{why}.</p></body></html>\n"
    )
}

/// Whether loading failed because the experiment is not there (yet).
fn is_not_found(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<vernier_report::ReportError>(),
        Some(vernier_report::ReportError::ExperimentNotFound(_))
    )
}

/// What `--watch` has told the user, so each line is said once, not every 2 s.
#[derive(Default)]
struct WatchNotes {
    waiting: bool,
    writing: bool,
    /// Whether the experiment was last seen without a driver.
    unattended: bool,
    trials: Option<usize>,
}

impl WatchNotes {
    fn waiting(&mut self, name: &str) {
        if !std::mem::replace(&mut self.waiting, true) {
            errln!(
                "experiment {name} does not exist yet; waiting for it (checking every {REFRESH_SECONDS} s, Ctrl-C stops)"
            );
        }
    }

    /// Says when the driver is found gone (the page keeps being written: a resume may follow).
    fn unattended(&mut self, r: &ExperimentReport) {
        let note = r.unattended_note();
        if note.is_some() && !self.unattended {
            errln!(
                "experiment {}: {}",
                r.row.name,
                note.as_deref().unwrap_or_default()
            );
        }
        self.unattended = note.is_some();
    }

    fn writing(&mut self, args: &ReportArgs, r: &ExperimentReport) {
        let path = args.output.as_deref().unwrap_or(Path::new("-")).display();
        if !std::mem::replace(&mut self.writing, true) {
            errln!(
                "writing {path} every {REFRESH_SECONDS} s until experiment {} ends (open it in a browser: it reloads itself)",
                args.name
            );
        }
        if self.trials != Some(r.trials.len()) {
            self.trials = Some(r.trials.len());
            errln!(
                "{path}: {} {}, {} trials",
                args.name,
                r.row.status.phase,
                r.trials.len()
            );
        }
    }
}

/// Flag combinations that cannot work, refused before touching the database.
fn check(args: &ReportArgs, db: &str, kube: &KubeArgs) -> anyhow::Result<()> {
    if args.watch && (args.format != Format::Html || args.output.is_none()) {
        bail!(
            "--watch rewrites an HTML file, so it needs --format html and --output FILE\nhint: vernier report --watch {} --format html --output {}.html{}",
            args.name,
            args.name,
            crate::db::db_flag(db)
        );
    }
    let whole = match args.format {
        Format::Json => Some("json"),
        Format::Csv => Some("csv"),
        Format::Observations => Some("observations"),
        Format::Table | Format::Html => None,
    };
    if let (Some(_), Some(format)) = (args.top, whole) {
        bail!(
            "--top only limits the table and the HTML trial table, not --format {format}\nhint: drop --top; JSON and CSV always hold every trial"
        );
    }
    if kube.kube && args.format == Format::Observations {
        bail!(
            "--format observations reads the database: a cluster's Trial objects keep only each metric's reduced value, not every value reported\nhint: drop --kube to read the database, or ask the operator's DBManager (GetObservationLog) for a trial's values"
        );
    }
    Ok(())
}

/// `--format observations`: the observation log streamed to stdout or, through a temporary
/// file, to `--output`. A closed stdout (`| head`) ends it quietly.
async fn observations(db: &str, args: &ReportArgs) -> anyhow::Result<Exit> {
    let store = crate::db::open(db, vernier_store::OpenMode::ReadOnly).await?;
    let exit = |w: &observation_csv::Written| match w.phase.as_str() {
        "Failed" => Exit::Failed,
        _ => Exit::Succeeded,
    };
    let Some(path) = &args.output else {
        let mut out = std::io::BufWriter::new(std::io::stdout());
        let written = observation_csv::write(&store, &args.name, &mut out).await;
        let written = written.and_then(|w| out.flush().map(|()| w).map_err(ReportError::Write));
        return match written {
            Ok(w) => Ok(exit(&w)),
            // A closed stdout (`| head`) ends it quietly.
            Err(ReportError::Write(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                Ok(Exit::Succeeded)
            }
            Err(e) => Err(e.into()),
        };
    };
    let target = AtomicWrite::plan(path, Format::Observations.example_file())?;
    let mut file = std::io::BufWriter::new(target.create()?);
    let written = observation_csv::write(&store, &args.name, &mut file).await;
    let written = written.and_then(|w| file.flush().map(|()| w).map_err(ReportError::Write));
    drop(file);
    match written {
        Ok(w) => {
            target.finish()?;
            errln!("wrote {} observation(s) to {}", w.rows, path.display());
            Ok(exit(&w))
        }
        Err(e) => {
            target.abandon();
            Err(e.into())
        }
    }
}

fn render(r: &ExperimentReport, args: &ReportArgs) -> anyhow::Result<String> {
    Ok(match args.format {
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&r.to_katib_json())?;
            s.push('\n');
            s
        }
        Format::Table => table::render(
            r,
            TableOptions {
                top: args.top,
                // Colour only for a person at a terminal, never in a file or a pipe.
                highlight: args.output.is_none() && std::io::stdout().is_terminal(),
                width: args
                    .output
                    .is_none()
                    .then(crate::out::terminal_width)
                    .flatten(),
            },
        ),
        Format::Csv => csv::render(r),
        Format::Html => html::render(r, HtmlOptions { top: args.top }),
        Format::Observations => unreachable!("--format observations is streamed, not rendered"),
    })
}

/// Writes through a temporary file and a rename, so a browser reloading a watched report
/// never sees half a page.
/// `example` is the file name a hint suggests when `path` is a directory.
pub fn write_atomically(path: &Path, text: &str, example: &str) -> anyhow::Result<()> {
    let target = AtomicWrite::plan(path, example)?;
    if let Err(e) = std::fs::write(&target.write_to, text) {
        target.abandon();
        return Err(e).with_context(|| cannot_write(path));
    }
    target.finish()
}

fn cannot_write(path: &Path) -> String {
    format!(
        "cannot write the report to {}\nhint: pass --output with a path in a writable directory",
        path.display()
    )
}

/// Where a report file is written and what rename, if any, puts it in place. A symlink is
/// written through (its target replaced, the link kept), and a path that is no regular file
/// (`/dev/stdout`, a named pipe) is written directly, as a rename would replace it.
struct AtomicWrite {
    shown: PathBuf,
    write_to: PathBuf,
    rename_to: Option<PathBuf>,
}

impl AtomicWrite {
    fn plan(path: &Path, example: &str) -> anyhow::Result<AtomicWrite> {
        if path.is_dir() {
            anyhow::bail!(
                "--output {} is a directory\nhint: name the file to write, e.g. {}",
                path.display(),
                path.join(example).display()
            );
        }
        let direct = |to: &Path| AtomicWrite {
            shown: path.to_path_buf(),
            write_to: to.to_path_buf(),
            rename_to: None,
        };
        let target = match std::fs::canonicalize(path) {
            Ok(resolved) => resolved,
            // A link whose target does not exist yet: writing through it creates the target.
            Err(_) if path.is_symlink() => return Ok(direct(path)),
            Err(_) => path.to_path_buf(),
        };
        if target.exists() && !target.is_file() {
            return Ok(direct(&target));
        }
        let mut tmp = target.as_os_str().to_owned();
        tmp.push(".tmp");
        Ok(AtomicWrite {
            shown: path.to_path_buf(),
            write_to: PathBuf::from(tmp),
            rename_to: Some(target),
        })
    }

    fn create(&self) -> anyhow::Result<std::fs::File> {
        std::fs::File::create(&self.write_to).with_context(|| cannot_write(&self.shown))
    }

    fn finish(self) -> anyhow::Result<()> {
        let Some(target) = &self.rename_to else {
            return Ok(());
        };
        if let Err(e) = std::fs::rename(&self.write_to, target) {
            let _ = std::fs::remove_file(&self.write_to);
            return Err(e).with_context(|| cannot_write(&self.shown));
        }
        Ok(())
    }

    /// Takes a half-written temporary file away; a direct write is left as it is.
    fn abandon(self) {
        if self.rename_to.is_some() {
            let _ = std::fs::remove_file(&self.write_to);
        }
    }
}
