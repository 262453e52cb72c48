//! `unlock`: clearing a dot-file lock that a killed process left beside an SQLite file.

use leasefence::protocol::Response;
use serde_json::json;

use crate::exit::{EXIT_INVALID, EXIT_OK, EXIT_REJECTED, EXIT_STORAGE};

pub(crate) fn unlock(db: &std::path::Path) -> i32 {
    if db.to_str().is_some_and(leasefence::is_postgres_url) {
        let failed = Response::Failed {
            code: "invalid_argument",
            message: "unlock clears a stale lock file beside an SQLite database; a \
                      PostgreSQL server releases the locks of a lost connection itself"
                .into(),
        };
        println!("{}", failed.to_json());
        return EXIT_INVALID;
    }
    #[cfg(target_os = "linux")]
    {
        match leasefence::clear_stale_lock(db) {
            Ok(leasefence::LockCheck::Free) => {
                println!("{}", json!({"value": "free"}));
                EXIT_OK
            }
            Ok(leasefence::LockCheck::Cleared) => {
                println!("{}", json!({"value": "cleared"}));
                EXIT_OK
            }
            Ok(leasefence::LockCheck::InUse { pids }) => {
                println!("{}", json!({"value": "in_use", "pids": pids}));
                eprintln!(
                    "leasefence: processes {pids:?} have {} open (or could not be checked: \
                     run as root); the lock may be theirs, so it was left alone. Stop them \
                     and run unlock again.",
                    db.display()
                );
                EXIT_REJECTED
            }
            Err(err) => {
                let failed = Response::Failed {
                    code: err.code(),
                    message: err.to_string(),
                };
                println!("{}", failed.to_json());
                EXIT_STORAGE
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let failed = Response::Failed {
            code: "storage",
            message: "unlock reads open files from /proc, which only Linux has".into(),
        };
        println!("{}", failed.to_json());
        EXIT_STORAGE
    }
}
