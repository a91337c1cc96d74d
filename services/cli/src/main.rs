//! `vernier`: the command line over Vernier's library crates. Parses arguments, composes the
//! crates, prints results; exit codes 0 succeeded, 1 experiment failed, 2 usage, validation
//! or internal error, 3 (`validate` only) valid for a cluster but not runnable locally, 130
//! interrupted.

mod commands;
mod db;
mod error_text;
mod first_point;
mod image_paths;
mod logging;
mod out;
mod progress;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use out::errln;
use std::path::PathBuf;
use std::process::ExitCode;

/// Hyperparameter tuning for Katib experiments, on this machine.
#[derive(Debug, Parser)]
#[command(name = "vernier", version, about, propagate_version = true)]
struct Cli {
    /// Database URL: a SQLite path (`sqlite://vernier.db`, the default) or URL.
    #[arg(long, global = true, env = "VERNIER_DB", default_value = "vernier.db")]
    db: String,
    /// How long a write waits for a database another session holds locked before it fails
    /// (seconds, e.g. 5 or 0.5).
    #[arg(long, global = true, env = "VERNIER_LOCK_TIMEOUT", value_name = "SECS", default_value = "30", value_parser = lock_timeout_value)]
    lock_timeout: std::time::Duration,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a Katib v1beta1 Experiment (YAML or JSON) with trials as local processes.
    Run {
        /// The experiment file.
        file: PathBuf,
        /// Seed for the algorithm and trial names (default: the `random_state` setting, else random).
        #[arg(long, allow_negative_numbers = true, value_parser = seed_value)]
        seed: Option<u64>,
        /// Directory for trial logs (default: `./vernier-logs/<experiment>` in the current
        /// directory); stored absolute, so `resume` from elsewhere writes to the same place.
        #[arg(long)]
        log_dir: Option<PathBuf>,
        #[command(flatten)]
        plugins: PluginArgs,
    },
    /// Continue an interrupted experiment, or one that ended by reaching maxTrialCount when
    /// given a larger --max-trial-count (its history and seed are kept).
    Resume {
        /// The experiment name.
        name: String,
        /// Set the experiment's maxTrialCount to N, above the trials it has created (the local
        /// twin of editing it on a cluster); raised, a finished experiment continues.
        #[arg(long, value_name = "N", value_parser = trial_count())]
        max_trial_count: Option<u32>,
        /// Change the experiment's parallelTrialCount to P.
        #[arg(long, value_name = "P", value_parser = trial_count())]
        parallel_trial_count: Option<u32>,
        /// Change the experiment's maxFailedTrialCount to F (0 fails it at the first failed
        /// trial), as Katib lets an Experiment's be edited.
        #[arg(long, value_name = "F")]
        max_failed_trial_count: Option<u32>,
        #[command(flatten)]
        plugins: PluginArgs,
    },
    /// List the experiments in the database.
    List,
    /// Show an experiment and its trials: a table, Katib JSON, CSV or a self-contained HTML page;
    /// or every value its trials reported (`--format observations`).
    Report {
        /// The experiment name.
        name: String,
        #[arg(long, value_enum, default_value_t = commands::report::Format::Table)]
        format: commands::report::Format,
        /// Show only the best N trials (table, and the HTML trial table).
        #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = top_value)]
        top: Option<usize>,
        /// Write to FILE instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Rewrite the HTML file every 2 s until the experiment ends (needs --format html --output).
        #[arg(long)]
        watch: bool,
        #[command(flatten)]
        kube: commands::report::KubeArgs,
    },
    /// A live web dashboard of the experiments (read-only, on 127.0.0.1:8080 by default).
    Dashboard(commands::dashboard::DashboardArgs),
    /// Compare experiments: best value, when it was reached, best so far at 10/25/50/100 trials.
    Compare {
        /// The experiment names.
        #[arg(required = true, num_args = 1..)]
        names: Vec<String>,
        #[arg(long, value_enum, default_value_t = commands::compare::Format::Table)]
        format: commands::compare::Format,
        /// Write to FILE instead of stdout.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
        #[command(flatten)]
        kube: commands::report::KubeArgs,
    },
    /// Add a hand-picked configuration to an experiment; `vernier resume` runs it first.
    Enqueue {
        /// The experiment name.
        name: String,
        /// A parameter value, NAME=VALUE; each parameter at most once, those left out are drawn
        /// at random when the trial is made.
        #[arg(long = "param", value_name = "NAME=VALUE", required = true)]
        params: Vec<String>,
    },
    /// Delete an experiment, its trials and their observations.
    Delete {
        /// The experiment name.
        name: String,
        /// Remove its trial logs too (the `<trial>.log` files of its own trials).
        #[arg(long)]
        logs: bool,
    },
    /// Compare suggestion algorithms on analytic problems (regret and time per suggestion).
    Benchmark {
        /// Algorithms to compare, comma-separated (grid needs steps, so it is not in the default);
        /// `name;key=value;...` sets algorithm settings.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "random,sobol,tpe,multivariate-tpe,bayesianoptimization,cmaes"
        )]
        algorithms: Vec<String>,
        /// Problems, comma-separated.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "branin,hartmann3,hartmann6,rosenbrock4,ackley5,styblinski-tang"
        )]
        problems: Vec<String>,
        /// Trials per run (default: 100 for hartmann6, 50 otherwise).
        #[arg(long)]
        trials: Option<usize>,
        /// Number of seeds (first_seed..first_seed + N).
        #[arg(long, default_value_t = 10)]
        seeds: usize,
        /// The first seed, so a second seed set (e.g. 10..20) can check a result.
        #[arg(long, default_value_t = 0, allow_negative_numbers = true, value_parser = seed_value)]
        first_seed: u64,
        #[arg(long, value_enum, default_value_t = ReportFormat::Table)]
        format: ReportFormat,
    },
    /// Serve Katib's gRPC API (Suggestion, EarlyStopping, DBManager, health) over the database.
    Serve {
        /// Address to listen on; other interfaces than loopback must be asked for explicitly.
        #[arg(long, default_value = commands::serve::DEFAULT_LISTEN, value_name = "ADDR")]
        listen: String,
        /// Create the SQLite database if it does not exist (otherwise a missing file is an error).
        #[arg(long)]
        create_db: bool,
    },
    /// Run the Kubernetes operator: Experiment and Trial controllers with leader election.
    Operator {
        #[command(flatten)]
        args: commands::operator::OperatorArgs,
        /// Suggestion services (Katib's suggestion images) for the algorithms they serve.
        #[command(flatten)]
        plugins: PluginArgs,
    },
    /// Metrics-collector sidecar: follow a trial's metrics file or event directory and report
    /// what it reads to the DBManager (the operator injects it for File and TensorFlowEvent).
    Collect(commands::collect::CollectArgs),
    /// Check an experiment file: every problem found, or whether a cluster and local mode can
    /// run it (exit 0 valid and runnable locally, 3 valid for a cluster only, 2 invalid).
    Validate {
        /// The experiment file.
        file: PathBuf,
        #[command(flatten)]
        plugins: PluginArgs,
    },
    /// Print the completion script for a shell, e.g. `vernier completions bash >
    /// ~/.local/share/bash-completion/completions/vernier`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

/// External suggestion plugins (Katib `api.v1.beta1.Suggestion` servers).
#[derive(Debug, Clone, clap::Args)]
struct PluginArgs {
    /// Ask the gRPC service at ADDR for algorithm NAME's suggestions (repeatable).
    #[arg(long = "suggestion-plugin", value_name = "NAME=ADDR")]
    suggestion_plugin: Vec<String>,
    /// A file mapping algorithm names to plugin addresses, or to images `vernier operator`
    /// deploys per experiment (katib-config `suggestions` style).
    #[arg(long = "suggestion-config", value_name = "FILE")]
    suggestion_config: Option<PathBuf>,
}

impl PluginArgs {
    fn load(&self) -> anyhow::Result<commands::plugins::Plugins> {
        commands::plugins::Plugins::load(self.suggestion_config.as_deref(), &self.suggestion_plugin)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ReportFormat {
    Table,
    Json,
}

/// How a command ended, mapped to the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Succeeded,
    Failed,
    Interrupted,
    /// `vernier validate`: valid for a cluster, but local mode cannot run it.
    ClusterOnly,
}

/// How long the process waits at exit for blocking work still running.
const EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// A trial count a Katib spec can hold: at least 1, at most an int32.
fn trial_count() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(1..=i64::from(i32::MAX))
}

/// A seed: a whole number a u64 holds. Said in words, since "invalid digit found in string"
/// does not tell `-3` or `1.5` what would do.
fn seed_value(text: &str) -> Result<u64, String> {
    text.trim().parse().map_err(|_| {
        format!(
            "a seed is a whole number from 0 to {}; hint: e.g. --seed 42",
            u64::MAX
        )
    })
}

/// How many of the best trials to show: 1 or more.
fn top_value(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(
            "the number of trials to show is a whole number, 1 or more; hint: e.g. --top 10".into(),
        ),
    }
}

/// A lock timeout: a positive number of seconds, at most a day.
fn lock_timeout_value(text: &str) -> Result<std::time::Duration, String> {
    let secs = text.trim().parse::<f64>().ok();
    match secs.filter(|s| *s > 0.0 && *s <= 86_400.0) {
        Some(s) => Ok(std::time::Duration::from_secs_f64(s)),
        None => Err("a lock timeout is a number of seconds above 0 and at most 86400; hint: e.g. --lock-timeout 5".into()),
    }
}

fn main() -> ExitCode {
    logging::init();
    let matches = Cli::command().get_matches();
    db::set_source(db::describe(matches.value_source("db")));
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            errln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    db::set_lock_timeout(cli.lock_timeout);
    let db_flag = db::db_flag(&cli.db);
    let result = runtime.block_on(async {
        let result = dispatch(cli).await;
        db::close_all().await;
        result
    });
    // Dropping the runtime would wait for every blocking task, and one still computing a
    // suggestion for a client that went away would keep `serve` alive after SIGTERM.
    runtime.shutdown_timeout(EXIT_WAIT);
    match result {
        Ok(Exit::Succeeded) => ExitCode::SUCCESS,
        Ok(Exit::Failed) => ExitCode::from(1),
        Ok(Exit::Interrupted) => ExitCode::from(130),
        Ok(Exit::ClusterOnly) => ExitCode::from(3),
        Err(e) => {
            errln!("error: {}", error_text::render(&e, &db_flag));
            ExitCode::from(2)
        }
    }
}

async fn dispatch(cli: Cli) -> anyhow::Result<Exit> {
    match cli.command {
        Command::Run {
            file,
            seed,
            log_dir,
            plugins,
        } => commands::run::run(&cli.db, &file, seed, log_dir, &plugins.load()?).await,
        Command::Resume {
            name,
            max_trial_count,
            parallel_trial_count,
            max_failed_trial_count,
            plugins,
        } => {
            let limits = vernier_runner::extend::NewLimits {
                max_trial_count,
                parallel_trial_count,
                max_failed_trial_count,
            };
            commands::run::resume(&cli.db, &name, limits, &plugins.load()?).await
        }
        Command::List => commands::list::list(&cli.db).await,
        Command::Report {
            name,
            format,
            top,
            output,
            watch,
            kube,
        } => {
            let args = commands::report::ReportArgs {
                name,
                format,
                top,
                output,
                watch,
            };
            commands::report::report(&cli.db, &kube, args).await
        }
        Command::Dashboard(args) => commands::dashboard::dashboard(&cli.db, args).await,
        Command::Compare {
            names,
            format,
            output,
            kube,
        } => commands::compare::compare(&cli.db, &kube, &names, format, output).await,
        Command::Enqueue { name, params } => {
            commands::enqueue::enqueue(&cli.db, &name, &params).await
        }
        Command::Delete { name, logs } => commands::delete::delete(&cli.db, &name, logs).await,
        Command::Serve { listen, create_db } => {
            commands::serve::serve(&cli.db, &listen, create_db).await
        }
        Command::Operator { args, plugins } => {
            commands::operator::operator(&cli.db, args, &plugins.load()?).await
        }
        Command::Collect(args) => commands::collect::collect(args).await,
        Command::Validate { file, plugins } => {
            commands::validate::validate(&cli.db, &file, &plugins.load()?).await
        }
        Command::Completions { shell } => commands::completions::completions(shell),
        Command::Benchmark {
            algorithms,
            problems,
            trials,
            seeds,
            first_seed,
            format,
        } => commands::benchmark::benchmark(commands::benchmark::BenchmarkArgs {
            algorithms,
            problems,
            trials,
            seeds,
            first_seed,
            json: format == ReportFormat::Json,
        }),
    }
}
