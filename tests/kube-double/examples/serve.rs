//! Run the double (and the simulated training operator) standalone, to poke at it with
//! `kubectl --server <url>` or curl: `cargo run -p vernier-kube-double --example serve`.
//! Prints the URL and serves until Ctrl-C.

use vernier_kube_double::{KubeDouble, SimulatedTrainingOperator, SimulationOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let double = KubeDouble::start().await?;
    let operator = SimulatedTrainingOperator::spawn(&double, SimulationOptions::default()).await?;
    println!("{}", double.url());
    tokio::signal::ctrl_c().await?;
    operator.shutdown().await;
    double.shutdown().await;
    Ok(())
}
