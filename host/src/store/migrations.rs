//! Each store's migrations, embedded by `build.rs` (`migrations/sqlite`, `migrations/postgres`)
//! and read the way sqlx's `migrate!` reads a folder: `<version>_<description>.sql`, the
//! description with `_` as spaces, no transaction when the file starts `-- no-transaction`, the
//! checksum sqlx computes (SHA-384 of the text), so databases migrated by earlier builds verify.
//!
//! Not `migrate!` itself: its proc-macro crate links sqlx's drivers, so a cold build compiled
//! sqlx and SQLite twice, once for the compiler (issue 59, BENCHMARKS.md "First build").

use std::borrow::Cow;

use futures::future::BoxFuture;
use sqlx::error::BoxDynError;
use sqlx::migrate::{AppliedMigration, Migration, MigrationSource, MigrationType, Migrator};

include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

/// One store's migrations: `(file name, text)`, sorted by name.
#[derive(Debug)]
pub(super) struct Embedded(pub &'static [(&'static str, &'static str)]);

impl Embedded {
    pub(super) async fn migrator(self) -> Result<Migrator, sqlx::migrate::MigrateError> {
        Migrator::new(self).await
    }

    fn migrations(&self) -> Result<Vec<Migration>, BoxDynError> {
        let mut migrations = Vec::with_capacity(self.0.len());
        for (name, sql) in self.0 {
            let Some((version, rest)) = name.split_once('_') else {
                return Err(
                    format!("migration {name:?}: expected <version>_<description>.sql").into(),
                );
            };
            let version: i64 = version
                .parse()
                .map_err(|_| format!("migration {name:?}: the version is not an integer"))?;
            let kind = MigrationType::from_filename(rest);
            let description = rest.trim_end_matches(kind.suffix()).replace('_', " ");
            let no_tx = sql.starts_with("-- no-transaction");
            migrations.push(Migration::new(
                version,
                Cow::Owned(description),
                kind,
                Cow::Borrowed(*sql),
                no_tx,
            ));
        }
        migrations.sort_by_key(|m| m.version);
        Ok(migrations)
    }
}

impl MigrationSource<'static> for Embedded {
    fn resolve(self) -> BoxFuture<'static, Result<Vec<Migration>, BoxDynError>> {
        Box::pin(std::future::ready(self.migrations()))
    }
}

/// How the migrations a database has had differ from `ours`, in words; `None` when they are the
/// same, versions and checksums. For a command beside a server (`sqlite::migrate_beside`): it
/// migrates only what differs, and only where no server holds the database.
pub(super) fn difference(ours: &Migrator, applied: &[AppliedMigration]) -> Option<String> {
    let ours: Vec<&Migration> = ours
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
        .collect();
    for m in &ours {
        match applied.iter().find(|a| a.version == m.version) {
            None => {
                return Some(format!(
                    "its schema is older: migration {} ({}) is not applied there",
                    m.version, m.description
                ));
            }
            Some(a) if a.checksum != m.checksum => {
                return Some(format!(
                    "migration {} ({}) was applied there with other text",
                    m.version, m.description
                ));
            }
            Some(_) => {}
        }
    }
    let unknown = applied
        .iter()
        .find(|a| ours.iter().all(|m| m.version != a.version))?;
    Some(format!(
        "its schema is newer: migration {} is applied there and unknown to this chatd",
        unknown.version
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_schema_differs_by_a_missing_an_unknown_or_a_changed_migration() {
        let ours = Embedded(&[
            ("20260101000001_first.sql", "SELECT 1;"),
            ("20260101000002_second.sql", "SELECT 2;"),
        ])
        .migrator()
        .await
        .unwrap();
        let applied = |rows: &[(i64, &'static str)]| -> Vec<AppliedMigration> {
            use sha2::Digest as _;
            let rows = rows.iter().map(|(version, text)| AppliedMigration {
                version: *version,
                checksum: Cow::Owned(sha2::Sha384::digest(text.as_bytes()).to_vec()),
            });
            rows.collect()
        };
        let both = [(20260101000001, "SELECT 1;"), (20260101000002, "SELECT 2;")];
        assert_eq!(difference(&ours, &applied(&both)), None);
        let older = difference(&ours, &applied(&both[..1])).unwrap();
        assert!(
            older.contains("older") && older.contains("20260101000002 (second)"),
            "{older}"
        );
        let mut more = both.to_vec();
        more.push((20260101000003, "SELECT 3;"));
        let newer = difference(&ours, &applied(&more)).unwrap();
        assert!(
            newer.contains("newer") && newer.contains("20260101000003"),
            "{newer}"
        );
        let changed = [
            (20260101000001, "SELECT 1;"),
            (20260101000002, "SELECT 22;"),
        ];
        let changed = difference(&ours, &applied(&changed)).unwrap();
        assert!(changed.contains("other text"), "{changed}");
    }

    /// What `migrate!` made of each store's first migration, and the checksum sqlx keeps.
    #[test]
    fn migrations_read_as_sqlx_reads_a_folder() {
        for (files, version) in [(SQLITE, 20261122000001), (POSTGRES, 20261125000001)] {
            let migrations = Embedded(files).migrations().unwrap();
            assert_eq!(migrations.len(), files.len());
            assert!(migrations.windows(2).all(|w| w[0].version < w[1].version));
            let first = &migrations[0];
            assert_eq!(first.version, version);
            assert_eq!(first.description, "initial");
            assert_eq!(first.migration_type, MigrationType::Simple);
            assert!(!first.no_tx);
        }
        let named = Embedded(&[("20261124000001_length_limits.sql", "SELECT 1;")])
            .migrations()
            .unwrap();
        assert_eq!(named[0].description, "length limits");
        use sha2::Digest as _;
        assert_eq!(
            &*named[0].checksum,
            sha2::Sha384::digest(b"SELECT 1;").as_slice()
        );
        assert!(Embedded(&[("initial.sql", "")]).migrations().is_err());
    }

    /// A database migrated by a build that embedded the folders with `sqlx::migrate!` keeps its
    /// checksums, so it opens here: sqlx's own reading of the folder gives the same migrations.
    #[tokio::test]
    async fn the_embedded_files_match_sqlx_s_reading_of_the_folder() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations");
        for (files, folder) in [(SQLITE, "sqlite"), (POSTGRES, "postgres")] {
            let ours = Embedded(files).migrator().await.unwrap();
            let theirs = Migrator::new(root.join(folder).as_path()).await.unwrap();
            let key = |m: &Migration| {
                (
                    m.version,
                    m.description.to_string(),
                    m.checksum.to_vec(),
                    m.no_tx,
                )
            };
            let ours: Vec<_> = ours.iter().map(key).collect();
            let theirs: Vec<_> = theirs.iter().map(key).collect();
            assert_eq!(ours, theirs, "{folder}");
        }
    }
}
