//! The store's errors. Every message is redacted: a PostgreSQL URL may carry a password, and a
//! database error may quote a value.

use headroom_core::redact::redact;

/// What went wrong in the store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database could not be opened or reached.
    #[error("cannot open the database {target}: {message}")]
    Open {
        /// The path or URL, redacted.
        target: String,
        /// Why, redacted.
        message: String,
    },
    /// Applying the schema migrations failed.
    #[error("database migration failed: {0}")]
    Migrate(String),
    /// A write collided with a unique constraint.
    #[error("conflict with an existing row: {0}")]
    Conflict(String),
    /// A write referenced a row that does not exist (a foreign key).
    #[error("a referenced row does not exist: {0}")]
    MissingReference(String),
    /// A row the caller named does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// A value handed to the store is not acceptable.
    #[error("invalid value for {field}: {problem}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// A stored value could not be read back as its type.
    #[error("unreadable value in {column}: {problem}")]
    Corrupt {
        /// The column.
        column: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// Any other database error.
    #[error("database error: {0}")]
    Database(String),
    /// A bulk write failed in a way that is not one row's own, and the open transaction was
    /// rolled back with everything written since its last commit.
    #[error(
        "{cause}; the transaction was rolled back: the {lost} envelopes written since its last \
         commit (this batch included) were not stored, and importing again resumes after the last \
         commit"
    )]
    RolledBack {
        /// What failed.
        cause: Box<StoreError>,
        /// Envelopes lost with the transaction.
        lost: usize,
    },
}

/// The store's result type.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

impl StoreError {
    /// Whether this is a unique-constraint conflict.
    pub fn is_conflict(&self) -> bool {
        matches!(self, StoreError::Conflict(_))
    }

    pub(crate) fn open(target: &str, message: impl std::fmt::Display) -> Self {
        // The target whole: a password may hold a blank or `/?#`, which end a URL in text.
        StoreError::Open {
            target: headroom_core::redact::redact_url(target),
            message: headroom_core::redact::redact_about_url(target, &message.to_string()),
        }
    }

    pub(crate) fn corrupt(column: &'static str, problem: impl std::fmt::Display) -> Self {
        StoreError::Corrupt {
            column,
            problem: redact(&problem.to_string()),
        }
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        use sqlx::error::ErrorKind;
        if let Some(db) = error.as_database_error() {
            let message = redact(db.message());
            return match db.kind() {
                ErrorKind::UniqueViolation => StoreError::Conflict(message),
                ErrorKind::ForeignKeyViolation => StoreError::MissingReference(message),
                _ => StoreError::Database(with_storage_hint(db.code().as_deref(), message)),
            };
        }
        if matches!(error, sqlx::Error::PoolTimedOut) {
            // sqlx's own words ("pool timed out while waiting for an open connection") hide
            // the two causes: no connection could be opened (PostgreSQL down or refusing: sqlx
            // retries until the wait ends), or every connection stayed busy (on SQLite,
            // waiting on a lock another process holds).
            return StoreError::Database(
                "no database connection within the wait: the database is unreachable (down, \
                 restarting or refusing connections), or it stayed busy (another process \
                 holding SQLite's write lock, or a long transaction of this one); try again \
                 when it answers"
                    .to_owned(),
            );
        }
        if matches!(error, sqlx::Error::Io(_)) {
            // A connection the pool held was cut (the server went away, a proxy closed it):
            // the same situation as no connection at all, said in the same words.
            return StoreError::Database(format!(
                "the connection to the database was lost: the database is unreachable (down, \
                 restarting or cut off); try again when it answers ({})",
                redact(&error.to_string())
            ));
        }
        StoreError::Database(redact(&error.to_string()))
    }
}

/// SQLite's "disk I/O error" and "database or disk is full", and PostgreSQL's `disk_full`,
/// usually mean the volume (or a file-size limit) ran out of room: say so, since the
/// database's own words do not.
pub(crate) fn with_storage_hint(code: Option<&str>, message: String) -> String {
    // SQLite's primary codes are the low byte of the extended one: 10 I/O error, 13 full.
    let sqlite_primary = code.and_then(|c| c.parse::<i32>().ok()).map(|c| c & 0xff);
    let exhausted = matches!(sqlite_primary, Some(10 | 13)) || code == Some("53100");
    if exhausted {
        format!(
            "{message} (the disk holding the database may be full, or a file-size limit \
             reached: free space and run the command again; what was committed is intact)"
        )
    } else {
        message
    }
}

impl From<sqlx::migrate::MigrateError> for StoreError {
    fn from(error: sqlx::migrate::MigrateError) -> Self {
        // A migration that ran out of room says so, as any other statement does.
        let code = match &error {
            sqlx::migrate::MigrateError::Execute(e)
            | sqlx::migrate::MigrateError::ExecuteMigration(e, _) => e
                .as_database_error()
                .and_then(|db| db.code().map(|c| c.into_owned())),
            _ => None,
        };
        StoreError::Migrate(with_storage_hint(
            code.as_deref(),
            redact(&error.to_string()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_named_as_such() {
        for code in ["10", "778", "13", "53100"] {
            let m = with_storage_hint(Some(code), "disk I/O error".to_owned());
            assert!(m.contains("may be full"), "{code}: {m}");
        }
        for code in [None, Some("5"), Some("23505"), Some("x")] {
            assert_eq!(with_storage_hint(code, "busy".to_owned()), "busy");
        }
    }

    #[test]
    fn a_pool_timeout_says_the_database_is_busy() {
        let e = StoreError::from(sqlx::Error::PoolTimedOut).to_string();
        assert!(e.contains("busy") && e.contains("write lock"), "{e}");
        assert!(!e.contains("pool timed out"), "{e}");
    }

    /// Defect: a pooled connection cut under `serve` said "error communicating with
    /// database: Connection reset by peer", not that the database is unreachable.
    #[test]
    fn a_lost_connection_says_the_database_is_unreachable() {
        let reset = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let e = StoreError::from(sqlx::Error::Io(reset)).to_string();
        assert!(
            e.contains("unreachable") && e.contains("reset by peer"),
            "{e}"
        );
    }

    #[test]
    fn a_pool_timeout_names_an_unreachable_database_first() {
        let e = StoreError::from(sqlx::Error::PoolTimedOut).to_string();
        let unreachable = e.find("unreachable").expect("says unreachable");
        assert!(
            e.find("write lock").is_some_and(|lock| unreachable < lock),
            "{e}"
        );
    }
}
