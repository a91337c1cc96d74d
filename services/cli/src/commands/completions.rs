//! `vernier completions SHELL`: the shell completion script for every command and flag,
//! generated from the same clap definition the binary parses with.

use crate::Exit;
use crate::out::out;
use clap::CommandFactory;
use clap_complete::Shell;

pub fn completions(shell: Shell) -> anyhow::Result<Exit> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut crate::Cli::command(), "vernier", &mut script);
    // Written through the pipe-safe printer: `vernier completions bash | head` stops quietly.
    out!("{}", String::from_utf8_lossy(&script));
    Ok(Exit::Succeeded)
}
