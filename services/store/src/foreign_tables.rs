//! A server database that already holds tables of the names Vernier creates, without the
//! migration record that says Vernier made them, belongs to someone else (Katib's own database
//! keeps its metrics in `observation_logs`). Applying the schema there would fail half way
//! (MySQL's DDL is not transactional), leaving Vernier's first tables behind in it; it is
//! refused before anything is created.

use crate::error::StoreError;

/// [`StoreError::ForeignTables`] when the database at `url` (redacted) has `existing` tables
/// the schema would collide with.
pub(crate) fn refuse_colliding(url: &str, existing: &[String]) -> Result<(), StoreError> {
    let tables = colliding(existing);
    if tables.is_empty() {
        return Ok(());
    }
    Err(StoreError::ForeignTables {
        url: url.to_owned(),
        tables,
    })
}

/// Every table the migrations create, and the table of the migration record.
const VERNIER_TABLES: &[&str] = &[
    "experiments",
    "trials",
    "observation_logs",
    "observation_summaries",
    "observation_summaries_pending",
    "experiment_leases",
];
const MIGRATION_RECORD: &str = "_sqlx_migrations";

/// Of the database's `existing` tables, those the schema would collide with: none when the
/// migration record is there (Vernier made them; the migrator checks the rest).
pub(crate) fn colliding(existing: &[String]) -> Vec<String> {
    if existing
        .iter()
        .any(|t| t.eq_ignore_ascii_case(MIGRATION_RECORD))
    {
        return Vec::new();
    }
    named_as_vernier(existing)
}

/// Of the database's `existing` tables (or views), those named as one the schema creates or
/// as the migration record, whoever made them.
pub(crate) fn named_as_vernier(existing: &[String]) -> Vec<String> {
    let mut found: Vec<String> = existing
        .iter()
        .filter(|t| {
            let vernier = VERNIER_TABLES.iter().chain([&MIGRATION_RECORD]);
            vernier.into_iter().any(|v| t.eq_ignore_ascii_case(v))
        })
        .cloned()
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_an_unrecorded_schema_collides() {
        // (tables in the database, colliding)
        let cases: &[(&[&str], &[&str])] = &[
            (&[], &[]),
            (&["users", "orders"], &[]),
            // Katib's database.
            (&["observation_logs"], &["observation_logs"]),
            (
                &["trials", "users", "Experiments"],
                &["Experiments", "trials"],
            ),
            // Vernier's own, recorded.
            (
                &[
                    "_sqlx_migrations",
                    "experiments",
                    "trials",
                    "observation_logs",
                ],
                &[],
            ),
        ];
        for (existing, want) in cases {
            assert_eq!(colliding(&names(existing)), names(want), "{existing:?}");
        }
    }
}
