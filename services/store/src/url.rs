//! Turns the user's database URL into a backend and a target, so each backend sees only inputs
//! it can open and unsupported URLs fail before anything touches the disk or the network; and
//! redacts passwords so no error message or log line ever repeats one.

use crate::error::StoreError;
use std::path::PathBuf;

/// Where a SQLite database lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SqliteTarget {
    File(PathBuf),
    /// Private to one `SqlStore` (shared by its pooled connections); for tests.
    Memory,
}

/// A parsed database URL. Server URLs are kept whole: sqlx parses their options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DatabaseUrl {
    Sqlite(SqliteTarget),
    /// `postgres://` or `postgresql://`.
    Postgres(String),
    /// `mysql://` or `mariadb://` (rewritten to `mysql://`, the scheme sqlx reads).
    MySql(String),
}

pub(crate) fn parse(url: &str) -> Result<DatabaseUrl, StoreError> {
    let unsupported = || StoreError::UnsupportedUrl { url: redact(url) };
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
        check_server_url(url)?;
        return Ok(DatabaseUrl::Postgres(url.to_owned()));
    }
    if lower.starts_with("mysql://") || lower.starts_with("mariadb://") {
        check_server_url(url)?;
        let rest = &url[url.find("://").map_or(0, |i| i + 3)..];
        return Ok(DatabaseUrl::MySql(format!("mysql://{rest}")));
    }
    if let Some(scheme) = server_scheme_without_slashes(&lower) {
        // Redacted in the form `url` parses, then shown without the `//` as it was written.
        let meant = redact(&format!(
            "{scheme}://{}",
            url[scheme.len() + 1..].trim_start_matches('/')
        ));
        return Err(StoreError::InvalidUrl {
            url: meant.replacen("://", ":", 1),
            reason: format!(
                "`{scheme}:` must be followed by `//`: `{meant}` (for a SQLite file whose name \
                 starts with `{scheme}:`, put `./` before it)"
            ),
        });
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

/// The server scheme `lower` starts with when it lacks the `//` after the colon
/// (`postgres:host/db`), which would otherwise be read as a SQLite file name.
fn server_scheme_without_slashes(lower: &str) -> Option<&str> {
    let (scheme, rest) = lower.split_once(':')?;
    let server = ["postgres", "postgresql", "mysql", "mariadb"].contains(&scheme);
    (server && !rest.starts_with("//")).then_some(scheme)
}

/// A server URL must name its database: connecting to the server's default database would
/// put Vernier's tables wherever the user's account happens to land.
fn check_server_url(url: &str) -> Result<(), StoreError> {
    let parsed = ::url::Url::parse(url).map_err(|e| StoreError::InvalidUrl {
        url: redact(url),
        reason: format!("{e}{}", unencoded_user_info(url)),
    })?;
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(StoreError::InvalidUrl {
            url: redact(url),
            reason: "it names no host".to_owned(),
        });
    }
    if parsed.path().trim_start_matches('/').is_empty() {
        return Err(StoreError::InvalidUrl {
            url: redact(url),
            reason: "it names no database".to_owned(),
        });
    }
    // The driver opens the file only while connecting, and says "No such file or directory"
    // without naming it, under a hint about the server being down.
    if let Some((key, path)) = parsed
        .query_pairs()
        .find(|(k, _)| matches!(k.as_ref(), "sslrootcert" | "sslcert" | "sslkey" | "ssl-ca"))
        && !std::path::Path::new(path.as_ref()).exists()
    {
        return Err(StoreError::InvalidUrl {
            url: redact(url),
            reason: format!("{key} file {path:?} does not exist"),
        });
    }
    // Another character set stores what it cannot hold as mojibake, silently; the tables are
    // utf8mb4 whatever the connection says.
    if let Some((_, charset)) = parsed.query_pairs().find(|(k, _)| k == "charset")
        && !charset.eq_ignore_ascii_case("utf8mb4")
    {
        return Err(StoreError::InvalidUrl {
            url: redact(url),
            reason: format!(
                "charset {charset:?} cannot hold every name and value Vernier stores; hint: \
                 drop ?charset= (Vernier talks utf8mb4)"
            ),
        });
    }
    Ok(())
}

/// A note when the user name or password before the url's last `@` holds a character that
/// ends it early (`#`, `?`, `/`): the parser then reads the rest of the password as a port,
/// and says only "invalid port number".
fn unencoded_user_info(url: &str) -> &'static str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    match rest.rsplit_once('@') {
        Some((user_info, _)) if user_info.contains(['#', '?', '/']) => {
            " (the user name or password holds `#`, `?` or `/`, which end it: write them \
             percent-encoded, `#` as %23, `?` as %3F, `/` as %2F, and `@` as %40, `:` as %3A)"
        }
        _ => "",
    }
}

/// A server host as a resolver takes it: an IPv6 literal without the brackets a URL writes
/// it in (`[::1]`), which the drivers keep and then fail to look up.
pub(crate) fn resolvable_host(host: &str) -> Option<&str> {
    host.strip_prefix('[').and_then(|h| h.strip_suffix(']'))
}

/// The URL with any password replaced by `***`, for messages: the user-info one and any query
/// parameter named like one (`?password=`, `?sslpassword=`, which the drivers also read). Text
/// that does not parse as a URL is returned unchanged unless it looks like it holds credentials.
pub fn redact(url: &str) -> String {
    match ::url::Url::parse(url) {
        Ok(mut parsed) => {
            let secret = |k: &str| k.to_ascii_lowercase().contains("password");
            let in_query = parsed.query_pairs().any(|(k, _)| secret(&k));
            if parsed.password().is_none() && !in_query {
                return url.to_owned();
            }
            if parsed.password().is_some() && parsed.set_password(Some("***")).is_err() {
                return "<database url with a password>".to_owned();
            }
            if in_query {
                let pairs: Vec<(String, String)> = parsed
                    .query_pairs()
                    .map(|(k, v)| {
                        let v = if secret(&k) {
                            "***".into()
                        } else {
                            v.into_owned()
                        };
                        (k.into_owned(), v)
                    })
                    .collect();
                parsed.query_pairs_mut().clear().extend_pairs(pairs);
            }
            parsed.to_string()
        }
        // `user:secret@host` that did not parse: hide everything before the `@`.
        Err(_) if url.contains('@') && url.contains("://") => {
            let scheme_end = url.find("://").map_or(0, |i| i + 3);
            let at = url.rfind('@').unwrap_or(scheme_end);
            format!("{}***{}", &url[..scheme_end], &url[at..])
        }
        Err(_) => url.to_owned(),
    }
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
    fn server_forms() {
        assert_eq!(
            parse("postgres://katib@db/katib").unwrap(),
            DatabaseUrl::Postgres("postgres://katib@db/katib".to_owned())
        );
        assert!(matches!(
            parse("postgresql://db:5433/x?sslmode=disable").unwrap(),
            DatabaseUrl::Postgres(_)
        ));
        assert_eq!(
            parse("mariadb://root@db:3306/katib").unwrap(),
            DatabaseUrl::MySql("mysql://root@db:3306/katib".to_owned())
        );
        assert_eq!(
            parse("MySQL://root@db/katib").unwrap(),
            DatabaseUrl::MySql("mysql://root@db/katib".to_owned())
        );
    }

    #[test]
    fn server_urls_must_name_host_and_database() {
        let e = parse("postgres://u:pw@db:5432").unwrap_err();
        let text = e.to_string();
        assert!(text.contains("names no database"), "{text}");
        assert!(text.contains("postgres://u:***@db:5432"), "{text}");
        assert!(!text.contains("pw"), "{text}");
        let e = parse("mysql:///katib").unwrap_err();
        assert!(e.to_string().contains("names no host"), "{e}");
        let e = parse("postgres://u@db/").unwrap_err().to_string();
        assert!(
            e.contains("postgres://u@db/") && e.contains("names no database"),
            "{e}"
        );
        assert_eq!(resolvable_host("[::1]"), Some("::1"));
        assert_eq!(resolvable_host("db.example"), None);
        let e = parse("postgres://u@db/x?sslmode=verify-ca&sslrootcert=/no/such.pem").unwrap_err();
        assert!(
            e.to_string()
                .contains("sslrootcert file \"/no/such.pem\" does not exist"),
            "{e}"
        );
        let e = parse("mysql://root@db/katib?charset=latin1").unwrap_err();
        assert!(e.to_string().contains("charset \"latin1\""), "{e}");
        assert!(parse("mysql://root@db/katib?charset=UTF8MB4").is_ok());
    }

    /// A password holding `#`, `?` or `/` as written ends early, and the parser blames the port:
    /// the error says to percent-encode, and never shows the password.
    #[test]
    fn an_unencoded_password_is_named_as_the_cause() {
        for u in [
            "postgres://postgres:S3cret#frag@127.0.0.1:5432/db",
            "postgres://postgres:S3cret/x@127.0.0.1:5432/db",
            "mysql://root:S3cret?x@127.0.0.1:3306/db",
        ] {
            let text = parse(u).expect_err(u).to_string();
            assert!(text.contains("invalid port number"), "{text}");
            assert!(
                text.contains("`#` as %23, `?` as %3F, `/` as %2F"),
                "{text}"
            );
            assert!(!text.contains("S3cret"), "{text}");
        }
        let text = parse("postgres://u@db:54x32/db").unwrap_err().to_string();
        assert!(!text.contains("percent-encoded"), "{text}");
        assert!(parse("postgres://u:S3cret%23frag@db/db").is_ok());
    }

    #[test]
    fn a_server_scheme_without_its_slashes_is_not_a_file_name() {
        for (u, scheme) in [
            ("postgres:127.0.0.1/test", "postgres"),
            ("postgresql:/h/db", "postgresql"),
            ("MySQL:root@h/db", "mysql"),
            ("mariadb:", "mariadb"),
        ] {
            let e = parse(u).expect_err(u).to_string();
            assert!(
                e.contains(&format!("`{scheme}:` must be followed by `//`"))
                    && e.contains(&format!("`{scheme}://"))
                    && e.contains("hint:"),
                "{e}"
            );
        }
        let secret = parse("postgres:me:pw@h/db")
            .expect_err("no slashes")
            .to_string();
        assert!(
            secret.contains("`postgres://me:***@h/db`") && !secret.contains("pw"),
            "{secret}"
        );
        for u in ["./postgres:x", "postgresfile.db", "data/mysql:1.db"] {
            assert!(matches!(parse(u), Ok(DatabaseUrl::Sqlite(_))), "{u}");
        }
    }

    #[test]
    fn rejects_other_schemes_and_empty_paths() {
        for u in ["redis://x", "", "sqlite:", "sqlite://"] {
            assert!(
                matches!(parse(u), Err(StoreError::UnsupportedUrl { .. })),
                "{u}"
            );
        }
    }

    #[test]
    fn redacts_passwords_only() {
        assert_eq!(
            redact("postgres://katib:s3cret@db:5432/katib?sslmode=disable"),
            "postgres://katib:***@db:5432/katib?sslmode=disable"
        );
        assert_eq!(
            redact("mysql://root@127.0.0.1:3306/test"),
            "mysql://root@127.0.0.1:3306/test"
        );
        assert_eq!(redact("runs/a.db"), "runs/a.db");
        assert_eq!(redact("sqlite:///tmp/a.db"), "sqlite:///tmp/a.db");
        assert_eq!(
            redact("postgres://u@db/x?password=S3cret&sslmode=disable"),
            "postgres://u@db/x?password=***&sslmode=disable"
        );
        assert_eq!(
            redact("mysql://u:a@db/x?sslPassword=b"),
            "mysql://u:***@db/x?sslPassword=***"
        );
    }
}
