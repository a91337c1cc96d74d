//! Whether a server database already holds this version's schema, so the migrator need not
//! run: sqlx's migrator asks for CREATE on the schema even when nothing is pending, and a
//! user allowed only to read (a reporting role on a shared server) could not open the store.

use sqlx::migrate::Migrator;

/// The query reading what the migrator recorded; the same text on PostgreSQL and MySQL.
pub(crate) const APPLIED: &str = "SELECT version, checksum FROM _sqlx_migrations WHERE success";

/// Every up-migration of `migrator` is recorded as applied, with the same checksum.
pub(crate) fn is_current(migrator: &Migrator, applied: &[(i64, Vec<u8>)]) -> bool {
    let wanted = migrator
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
        .map(|m| (m.version, &*m.checksum));
    all_applied(wanted, applied)
}

fn all_applied<'a>(
    mut wanted: impl Iterator<Item = (i64, &'a [u8])>,
    applied: &[(i64, Vec<u8>)],
) -> bool {
    wanted.all(|(version, checksum)| {
        applied
            .iter()
            .any(|(v, c)| *v == version && c.as_slice() == checksum)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A migration's version and checksum.
    type Row<'a> = (i64, &'a [u8]);

    #[test]
    fn current_only_when_every_migration_is_applied_unchanged() {
        let wanted: [Row; 2] = [(1, b"a"), (2, b"b")];
        let rows = |r: &[Row]| r.iter().map(|(v, c)| (*v, c.to_vec())).collect::<Vec<_>>();
        // (applied rows, current)
        let table: [(&[Row], bool); 5] = [
            (&[(1, b"a"), (2, b"b")], true),
            (&[(2, b"b"), (1, b"a"), (3, b"c")], true),
            (&[(1, b"a")], false),
            (&[(1, b"a"), (2, b"x")], false),
            (&[], false),
        ];
        for (applied, current) in table {
            assert_eq!(
                all_applied(wanted.into_iter(), &rows(applied)),
                current,
                "{applied:?}"
            );
        }
    }
}
