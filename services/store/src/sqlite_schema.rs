//! What an existing SQLite file holds before vernier opens it: this version's schema (read
//! it as it is), an older one (it must be upgraded, which writes), a newer one (read it,
//! warning), or none at all (an empty file, or another program's database, even one whose
//! migrations sqlx recorded, which a reader must leave untouched and a writer must not set up
//! over tables of the names it would create).

use sqlx::SqlitePool;
use sqlx::migrate::Migrator;

/// The schema of an existing file, as a read-only open finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SchemaState {
    /// Every migration this build knows is applied; `newer` is the highest version applied
    /// that it does not know (a newer vernier wrote the file).
    Current { newer: Option<i64> },
    /// A migration this build knows is not applied yet.
    Behind,
    /// No migration record, or another program's: the file's tables and views (none for an
    /// empty file).
    NotVernier { tables: Vec<String> },
}

/// Reads the migration record, or the tables when there is none. An error is one of reading
/// the file itself (not a database, damaged, locked).
pub(crate) async fn read_state(
    pool: &SqlitePool,
    migrator: &Migrator,
) -> Result<SchemaState, sqlx::Error> {
    let applied: Result<Vec<(i64, Vec<u8>)>, _> =
        sqlx::query_as("SELECT version, checksum FROM _sqlx_migrations WHERE success")
            .fetch_all(pool)
            .await;
    match applied {
        // Another program's migrations (sqlx is common): vernier's first one is not there. An
        // empty record is a file another vernier is setting up right now (the migrator makes
        // the record before it applies the first migration).
        Ok(applied) if !applied.is_empty() && !has_first_of(migrator, &applied) => {
            Ok(SchemaState::NotVernier {
                tables: tables(pool).await?,
            })
        }
        Ok(applied) => {
            let known: Vec<i64> = migrator.iter().map(|m| m.version).collect();
            let versions: Vec<i64> = applied.iter().map(|(v, _)| *v).collect();
            Ok(state_of(&versions, &known))
        }
        Err(sqlx::Error::Database(db)) if db.message().contains("no such table") => {
            Ok(SchemaState::NotVernier {
                tables: tables(pool).await?,
            })
        }
        Err(e) => Err(e),
    }
}

/// Whether `applied` records `migrator`'s first migration with its checksum: the mark of a file
/// vernier set up, whatever version wrote it last.
fn has_first_of(migrator: &Migrator, applied: &[(i64, Vec<u8>)]) -> bool {
    let Some(first) = migrator.iter().min_by_key(|m| m.version) else {
        return false;
    };
    applied
        .iter()
        .any(|(v, c)| *v == first.version && c.as_slice() == &*first.checksum)
}

/// Reads the state as [`read_state`] does, again for up to `settle` while the file reads as
/// one another vernier may be setting up right now: no tables yet, only tables of the names
/// vernier creates without its first migration recorded (the migrator creates its record,
/// then applies each migration in a transaction, and the two reads of [`read_state`] may
/// fall on either side of one), or some migrations applied and not all (a file truly
/// written by an older vernier is then upgraded after `settle`). A reader started together with
/// `vernier run` then sees the schema instead of "no vernier schema".
pub(crate) async fn read_settled_state(
    pool: &SqlitePool,
    migrator: &Migrator,
    settle: std::time::Duration,
) -> Result<SchemaState, sqlx::Error> {
    let until = std::time::Instant::now() + settle;
    loop {
        let state = read_state(pool, migrator).await;
        let unsettled = match &state {
            Ok(SchemaState::NotVernier { tables }) => {
                crate::foreign_tables::named_as_vernier(tables).len() == tables.len()
            }
            // Some migrations applied and not the rest: set up right now, or truly older.
            Ok(SchemaState::Behind) => true,
            _ => false,
        };
        if !unsettled || std::time::Instant::now() >= until {
            return state;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The file's own tables and views, by name.
pub(crate) async fn tables(pool: &SqlitePool) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') \
         AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .fetch_all(pool)
    .await
}

/// The state of a file whose migration record lists `applied`, for a build that knows `known`.
fn state_of(applied: &[i64], known: &[i64]) -> SchemaState {
    if known.iter().any(|k| !applied.contains(k)) {
        return SchemaState::Behind;
    }
    let newer = applied.iter().filter(|v| !known.contains(v)).max().copied();
    SchemaState::Current { newer }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_says_current_behind_or_newer() {
        let known = [1, 2, 3, 4];
        // (applied, state)
        let table: [(&[i64], SchemaState); 5] = [
            (&[1, 2, 3, 4], SchemaState::Current { newer: None }),
            (&[4, 3, 2, 1], SchemaState::Current { newer: None }),
            (&[1, 2, 3], SchemaState::Behind),
            (&[], SchemaState::Behind),
            (&[1, 2, 3, 4, 6, 5], SchemaState::Current { newer: Some(6) }),
        ];
        for (applied, state) in table {
            assert_eq!(state_of(applied, &known), state, "{applied:?}");
        }
        assert_eq!(state_of(&[1, 2, 5], &known), SchemaState::Behind);
    }
}
