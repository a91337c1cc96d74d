//! Turns the user's database URL into a backend and a target, so each backend sees only inputs
//! it can open and unsupported URLs fail before anything touches the disk.

use crate::error::StoreError;
use std::path::PathBuf;

/// Where a SQLite database lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SqliteTarget {
    File(PathBuf),
    /// Private to one `SqlStore` (shared by its pooled connections); for tests.
    Memory,
}

/// A parsed database URL. PostgreSQL and MySQL are recognised so their URLs get a precise
/// error until their backends exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DatabaseUrl {
    Sqlite(SqliteTarget),
}

pub(crate) fn parse(url: &str) -> Result<DatabaseUrl, StoreError> {
    let unsupported = || StoreError::UnsupportedUrl {
        url: url.to_owned(),
    };
    let lower = url.to_ascii_lowercase();
    for (scheme, backend) in [
        ("postgres://", "PostgreSQL"),
        ("postgresql://", "PostgreSQL"),
        ("mysql://", "MySQL"),
        ("mariadb://", "MySQL"),
    ] {
        if lower.starts_with(scheme) {
            return Err(StoreError::UnsupportedBackend {
                url: url.to_owned(),
                backend,
            });
        }
    }
    let path = if let Some(rest) = url.strip_prefix("sqlite://") {
        rest
    } else if let Some(rest) = url.strip_prefix("sqlite:") {
        rest
    } else if url.contains("://") {
        return Err(unsupported());
    } else {
        url
    };
    if path.is_empty() {
        return Err(unsupported());
    }
    if path == ":memory:" {
        return Ok(DatabaseUrl::Sqlite(SqliteTarget::Memory));
    }
    Ok(DatabaseUrl::Sqlite(SqliteTarget::File(PathBuf::from(path))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(p: &str) -> DatabaseUrl {
        DatabaseUrl::Sqlite(SqliteTarget::File(PathBuf::from(p)))
    }

    #[test]
    fn sqlite_forms() {
        assert_eq!(parse("sqlite:///tmp/a.db").unwrap(), file("/tmp/a.db"));
        assert_eq!(parse("sqlite://rel/a.db").unwrap(), file("rel/a.db"));
        assert_eq!(parse("sqlite:a.db").unwrap(), file("a.db"));
        assert_eq!(parse("runs/a.db").unwrap(), file("runs/a.db"));
        for m in [":memory:", "sqlite::memory:", "sqlite://:memory:"] {
            assert_eq!(
                parse(m).unwrap(),
                DatabaseUrl::Sqlite(SqliteTarget::Memory),
                "{m}"
            );
        }
    }

    #[test]
    fn rejects_other_schemes_and_empty_paths() {
        let e = parse("postgres://katib@db/katib").unwrap_err();
        assert!(e.to_string().contains("PostgreSQL"), "{e}");
        assert!(e.to_string().contains("postgres://katib@db/katib"), "{e}");
        assert!(matches!(
            parse("MySQL://root@db/katib"),
            Err(StoreError::UnsupportedBackend {
                backend: "MySQL",
                ..
            })
        ));
        for u in ["redis://x", "", "sqlite:", "sqlite://"] {
            assert!(
                matches!(parse(u), Err(StoreError::UnsupportedUrl { .. })),
                "{u}"
            );
        }
    }
}
