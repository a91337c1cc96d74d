//! `vernier compare A B ...`: several experiments' convergence side by side.

use crate::Exit;
use crate::commands::report::{KubeArgs, Source, write_atomically};
use crate::out::out;
use anyhow::bail;
use std::path::PathBuf;
use vernier_report::compare::{self, Convergence};

/// The formats of `vernier compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Table,
    Json,
    Html,
}

pub async fn compare(
    db: &str,
    kube: &KubeArgs,
    names: &[String],
    format: Format,
    output: Option<PathBuf>,
) -> anyhow::Result<Exit> {
    if let Some(dup) = names
        .iter()
        .enumerate()
        .find(|(i, n)| names[..*i].contains(n))
    {
        bail!(
            "experiment {:?} is named twice\nhint: name each experiment once",
            dup.1
        );
    }
    let source = Source::open(db, kube).await?;
    let mut cs = Vec::with_capacity(names.len());
    for name in names {
        cs.push(Convergence::of(&source.load(name, 0).await?));
    }
    let text = match format {
        Format::Table => compare::table(&cs),
        Format::Json => format!("{}\n", serde_json::to_string_pretty(&compare::json(&cs))?),
        Format::Html => compare::html(&cs),
    };
    match output {
        Some(path) => {
            let example = match format {
                Format::Table => "comparison.txt",
                Format::Json => "comparison.json",
                Format::Html => "comparison.html",
            };
            write_atomically(&path, &text, example)?
        }
        None => out!("{text}"),
    }
    Ok(Exit::Succeeded)
}
