//! `vernier delete NAME`: removes an experiment with its trials and observations.

use crate::Exit;

pub async fn delete(db: &str, name: &str) -> anyhow::Result<Exit> {
    let store = vernier_store::SqlStore::connect(db).await?;
    if store.delete_experiment(name).await? {
        println!("deleted experiment {name}");
        Ok(Exit::Succeeded)
    } else {
        anyhow::bail!(
            "experiment {name:?} does not exist in {}\nhint: `vernier list` shows the experiments there",
            vernier_store::redact_url(db)
        )
    }
}
