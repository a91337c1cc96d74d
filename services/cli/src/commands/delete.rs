//! `vernier delete NAME`: removes an experiment with its trials and observations.

use crate::Exit;
use crate::out::outln;

pub async fn delete(db: &str, name: &str) -> anyhow::Result<Exit> {
    let store = crate::db::open(db, vernier_store::OpenMode::Existing).await?;
    // Taking the lease refuses to pull an experiment from under its live driver; the delete
    // drops the lease row with the experiment.
    let lease = vernier_runner::lease::ExperimentLease::acquire(&store, name).await?;
    let deleted = store.delete_experiment(name).await?;
    drop(lease);
    if deleted {
        outln!("deleted experiment {name}");
        Ok(Exit::Succeeded)
    } else {
        anyhow::bail!(
            "experiment {name:?} does not exist in {}\nhint: `vernier list` shows the experiments there",
            vernier_store::redact_url(db)
        )
    }
}
