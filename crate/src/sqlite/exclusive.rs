//! A file that one Node process owns alone (`LeaseStore.open(path, {exclusive: true})`): WAL
//! without shared memory. SQLite keeps the WAL index in heap memory when `locking_mode =
//! EXCLUSIVE` is set before the WAL is entered, so the Node VFS (which has no shared memory
//! between processes) gets WAL's one sync per commit, at the price of holding the file's dot lock
//! from the open to the close: every other opener is refused while the owner lives.
//!
//! The database header says which files are in this state: SQLite's read/write versions
//! (bytes 18 and 19) are 2 for WAL, and the "shared with Node" mark (`application_id`, bytes
//! 68..72) is written before the switch to WAL, so it is always in the main file. A native WAL
//! file (POSIX locks and shared memory, no mark) is never taken for one.
//!
//! Close switches the file back to the rollback journal (`PERSIST`), so any opener finds it as
//! before. An owner that died (SIGKILL, power loss) leaves the WAL: the next leasefence opener,
//! Node or native, exclusive or not, finds no live lock holder and recovers it under an exclusive
//! lock ([`recover_wal`]) before anything else: SQLite replays the committed frames and
//! checkpoints them into the main file. docs/decisions/node-exclusive-wal.md says why.

use std::time::Duration;

use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::options::SHARED_WITH_NODE;

/// Whether `header` (the file's first 100 bytes) is that of a file left in exclusive WAL mode by
/// a Node owner (open now, or dead since).
pub(crate) fn left_in_exclusive_wal(header: &[u8]) -> bool {
    header.len() >= 100
        && header.starts_with(b"SQLite format 3\0")
        && header[18] == 2
        && header[19] == 2
        && i32::from_be_bytes([header[68], header[69], header[70], header[71]]) == SHARED_WITH_NODE
}

/// Whether `header` is that of a file shared with Node whose journal, when `journal_start` (its
/// first 8 bytes) is SQLite's journal magic, is hot: a transaction cut short, maybe an exclusive
/// owner's switch back from WAL at its close, whose rollback puts the file back in WAL mode. Its
/// opener recovers it as a WAL left behind, under an exclusive lock ([`recover_wal`]): a file in
/// WAL mode cannot be read otherwise without shared memory.
pub(crate) fn hot_journal_of_node_file(header: &[u8], journal_start: &[u8]) -> bool {
    const MAGIC: [u8; 8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7];
    header.len() >= 100
        && header.starts_with(b"SQLite format 3\0")
        && i32::from_be_bytes([header[68], header[69], header[70], header[71]]) == SHARED_WITH_NODE
        && journal_start.starts_with(&MAGIC)
}

/// Whether `header` is that of a WAL file (the native default) that no Node owner left.
#[cfg_attr(not(web), allow(dead_code))]
pub(crate) fn plain_wal(header: &[u8]) -> bool {
    header.len() >= 100
        && header.starts_with(b"SQLite format 3\0")
        && header[18] == 2
        && !left_in_exclusive_wal(header)
}

/// The refusal of an opener while `owner` (in words: "process 12 on host h") holds the file in
/// exclusive mode: what is going on and the two ways out.
pub(crate) fn owned_exclusively(path: &str, owner: &str) -> Error {
    Error::Open {
        path: path.to_string(),
        problem: format!(
            "{owner} has it open in exclusive mode (LeaseStore.open(path, {{exclusive: true}})), \
             which admits no other connection, from any process, while it is open. Close that \
             store (or stop that process) and open the file again, or open it without \
             `exclusive` in every process that shares it"
        ),
    }
}

/// Recovers a file an exclusive owner left in WAL mode (it died, or its close could not switch
/// back): under an exclusive lock SQLite reads the WAL into heap memory, the switch to `journal`
/// checkpoints every committed frame into the main file and deletes the WAL, and the connection
/// goes back to normal locking (its lock is released at its next access).
pub(crate) fn recover_wal(
    conn: &Connection,
    label: &str,
    journal: &str,
    timeout: Duration,
) -> Result<()> {
    set_locking_mode(conn, label, "exclusive")?;
    // The wait is the loop's alone, bounded by `timeout`: a busy handler (rusqlite installs a 5 s
    // one on every connection) would wait again at each of its attempts. The set-up that follows
    // installs the store's own.
    no_busy_handler(conn)?;
    let mode = switch_journal(conn, journal, timeout)?;
    if !mode.eq_ignore_ascii_case(journal) {
        return Err(Error::Open {
            path: label.to_string(),
            problem: format!(
                "a process that had the file open in exclusive mode left its write-ahead log \
                 (it stopped without closing the store), and SQLite could not switch it back \
                 to journal_mode {journal} (it stays in {mode} mode); open it with \
                 `exclusive: true` to use it as it is"
            ),
        });
    }
    set_locking_mode(conn, label, "normal")
}

/// Enters exclusive WAL mode on a connection in rollback mode: the lock mode first (SQLite
/// allocates the WAL index in heap memory only if it is exclusive when the WAL opens), then the
/// journal, then `synchronous = FULL`, which syncs the WAL at every commit (every acknowledged
/// commit is durable, as in every other mode of the library). The switch writes the header, so
/// the connection holds the lock from here to its close.
#[cfg_attr(not(web), allow(dead_code))]
pub(crate) fn enter(conn: &Connection, label: &str, timeout: Duration) -> Result<()> {
    set_locking_mode(conn, label, "exclusive")?;
    no_busy_handler(conn)?;
    let mode = switch_journal(conn, "WAL", timeout);
    conn.busy_timeout(timeout).map_err(Error::storage("open"))?;
    let mode = mode?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Error::Open {
            path: label.to_string(),
            problem: format!(
                "SQLite refused journal_mode WAL under exclusive locking (the file stays in \
                 {mode} mode); open it without `exclusive`"
            ),
        });
    }
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(Error::storage("open"))
}

/// Whether `conn` is in exclusive WAL mode (entered by [`enter`]).
#[cfg_attr(not(web), allow(dead_code))]
pub(crate) fn is_exclusive_wal(conn: &Connection) -> bool {
    let read = |sql: &str| conn.query_row(sql, [], |row| row.get::<_, String>(0));
    matches!(read("PRAGMA locking_mode"), Ok(m) if m.eq_ignore_ascii_case("exclusive"))
        && matches!(read("PRAGMA journal_mode"), Ok(m) if m.eq_ignore_ascii_case("wal"))
}

/// Leaves exclusive WAL mode before the close: checkpoints the WAL into the main file, deletes
/// it, and puts the file back in `journal` mode, as every non-exclusive opener expects it. If
/// this fails, the file stays in WAL mode and the next opener recovers it ([`recover_wal`]).
#[cfg_attr(not(web), allow(dead_code))]
pub(crate) fn leave(conn: &Connection, journal: &str) -> Result<()> {
    conn.query_row(&format!("PRAGMA journal_mode = {journal}"), [], |row| {
        row.get::<_, String>(0)
    })
    .map(|_| ())
    .map_err(Error::storage("close"))
}

fn no_busy_handler(conn: &Connection) -> Result<()> {
    conn.busy_timeout(Duration::ZERO)
        .map_err(Error::storage("open"))
}

fn set_locking_mode(conn: &Connection, label: &str, mode: &str) -> Result<()> {
    let now: String = conn
        .query_row(&format!("PRAGMA locking_mode = {mode}"), [], |row| {
            row.get(0)
        })
        .map_err(Error::storage("open"))?;
    if !now.eq_ignore_ascii_case(mode) {
        return Err(Error::Open {
            path: label.to_string(),
            problem: format!("SQLite refused locking_mode {mode} (it stays {now})"),
        });
    }
    Ok(())
}

/// `PRAGMA journal_mode = journal`, waiting out a busy lock up to `timeout` (SQLite answers busy
/// to a journal switch without calling the busy handler).
fn switch_journal(conn: &Connection, journal: &str, timeout: Duration) -> Result<String> {
    super::setup::set_journal_mode(conn, "", journal, timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(versions: u8, app: i32) -> Vec<u8> {
        let mut h = vec![0u8; 100];
        h[..16].copy_from_slice(b"SQLite format 3\0");
        h[18] = versions;
        h[19] = versions;
        h[68..72].copy_from_slice(&app.to_be_bytes());
        h
    }

    #[test]
    fn the_header_tells_a_node_owners_wal_from_a_native_one() {
        assert!(left_in_exclusive_wal(&header(2, SHARED_WITH_NODE)));
        assert!(!left_in_exclusive_wal(&header(1, SHARED_WITH_NODE)));
        assert!(!left_in_exclusive_wal(&header(2, 0)));
        assert!(plain_wal(&header(2, 0)));
        assert!(!plain_wal(&header(2, SHARED_WITH_NODE)));
        assert!(!plain_wal(&header(1, 0)));
        assert!(!left_in_exclusive_wal(&header(2, SHARED_WITH_NODE)[..99]));
        let magic = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7];
        assert!(hot_journal_of_node_file(
            &header(1, SHARED_WITH_NODE),
            &magic
        ));
        assert!(!hot_journal_of_node_file(
            &header(1, SHARED_WITH_NODE),
            &[0; 8]
        ));
        assert!(!hot_journal_of_node_file(&header(1, 0), &magic));
    }
}
