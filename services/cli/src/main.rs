//! `vernier`: the command line over Vernier's library crates. Parses arguments, composes the
//! crates, prints results; exit codes 0 succeeded, 1 experiment failed, 2 usage, validation
//! or internal error, 130 interrupted.

mod commands;
mod progress;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

/// Hyperparameter tuning for Katib experiments, on this machine.
#[derive(Debug, Parser)]
#[command(name = "vernier", version, about, propagate_version = true)]
struct Cli {
    /// Database URL: a SQLite path (`sqlite://vernier.db`, the default) or URL.
    #[arg(long, global = true, env = "VERNIER_DB", default_value = "vernier.db")]
    db: String,
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
        #[arg(long)]
        seed: Option<u64>,
        /// Directory for trial logs (default: `vernier-logs/<experiment>` beside the database).
        #[arg(long)]
        log_dir: Option<PathBuf>,
        #[command(flatten)]
        plugins: PluginArgs,
    },
    /// Continue an interrupted experiment.
    Resume {
        /// The experiment name.
        name: String,
        #[command(flatten)]
        plugins: PluginArgs,
    },
    /// List the experiments in the database.
    List,
    /// Show an experiment and its trials: a table, Katib JSON, CSV or a self-contained HTML page.
    Report {
        /// The experiment name.
        name: String,
        #[arg(long, value_enum, default_value_t = commands::report::Format::Table)]
        format: commands::report::Format,
        /// Show only the best N trials (table, and the HTML trial table).
        #[arg(long, value_name = "N")]
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
        /// A parameter value, NAME=VALUE; give every parameter of the search space once.
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
        /// Algorithms to compare, comma-separated (grid needs steps, so it is not in the default).
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
        /// Number of seeds (0..N).
        #[arg(long, default_value_t = 10)]
        seeds: usize,
        #[arg(long, value_enum, default_value_t = ReportFormat::Table)]
        format: ReportFormat,
    },
    /// Serve Katib's gRPC API (Suggestion, EarlyStopping, DBManager, health) over the database.
    Serve {
        /// Address to listen on; other interfaces than loopback must be asked for explicitly.
        #[arg(long, default_value = commands::serve::DEFAULT_LISTEN, value_name = "ADDR")]
        listen: String,
    },
    /// Run the Kubernetes operator: Experiment and Trial controllers with leader election.
    Operator(commands::operator::OperatorArgs),
    /// Metrics-collector sidecar: follow a trial's metrics file or event directory and report
    /// what it reads to the DBManager (the operator injects it for File and TensorFlowEvent).
    Collect(commands::collect::CollectArgs),
    /// Check an experiment file and print every problem found.
    Validate {
        /// The experiment file.
        file: PathBuf,
    },
}

/// External suggestion plugins (Katib `api.v1.beta1.Suggestion` servers).
#[derive(Debug, Clone, clap::Args)]
struct PluginArgs {
    /// Ask the gRPC service at ADDR for algorithm NAME's suggestions (repeatable).
    #[arg(long = "suggestion-plugin", value_name = "NAME=ADDR")]
    suggestion_plugin: Vec<String>,
    /// A file mapping algorithm names to plugin addresses (katib-config `suggestions` style).
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(dispatch(cli)) {
        Ok(Exit::Succeeded) => ExitCode::SUCCESS,
        Ok(Exit::Failed) => ExitCode::from(1),
        Ok(Exit::Interrupted) => ExitCode::from(130),
        Err(e) => {
            eprintln!("error: {e:#}");
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
        Command::Resume { name, plugins } => {
            commands::run::resume(&cli.db, &name, &plugins.load()?).await
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
        Command::Serve { listen } => commands::serve::serve(&cli.db, &listen).await,
        Command::Operator(args) => commands::operator::operator(&cli.db, args).await,
        Command::Collect(args) => commands::collect::collect(args).await,
        Command::Validate { file } => commands::validate::validate(&file),
        Command::Benchmark {
            algorithms,
            problems,
            trials,
            seeds,
            format,
        } => commands::benchmark::benchmark(commands::benchmark::BenchmarkArgs {
            algorithms,
            problems,
            trials,
            seeds,
            json: format == ReportFormat::Json,
        }),
    }
}
