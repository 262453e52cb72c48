//! What the public API does not offer, checked at compile time: each example below must fail to
//! compile (run by `cargo test --doc`). The CLI reaches the operations through
//! [`protocol::Request`](crate::protocol::Request) and `execute`; the protocol's readers and the
//! operation table stay inside the crate, and the database clients' types are not re-exported.

/// The typed-argument plumbing of the reader is gone:
///
/// ```compile_fail,E0432
/// use leasefence::protocol::{Arg, TypedArgs};
/// ```
pub struct TypedArguments;

/// The reader's field source is the crate's own:
///
/// ```compile_fail,E0603
/// use leasefence::protocol::Source;
/// ```
pub struct FieldSource;

/// The operation table and its names are the crate's own:
///
/// ```compile_fail,E0603
/// use leasefence::protocol::OP_NAMES;
/// ```
///
/// ```compile_fail,E0603
/// use leasefence::protocol::OPS;
/// ```
///
/// ```compile_fail,E0603
/// use leasefence::protocol::Op;
/// ```
pub struct OperationTable;

/// A backend on a file is [`TargetBackend`](crate::protocol::TargetBackend), the only one:
///
/// ```compile_fail,E0432
/// use leasefence::protocol::FileBackend;
/// ```
pub struct FileOnlyBackend;

/// The typed answer and its helpers are the crate's own (a caller gets a `Response`):
///
/// ```compile_fail,E0603
/// use leasefence::protocol::answer;
/// ```
///
/// ```compile_fail,E0603
/// use leasefence::protocol::Returned;
/// ```
///
/// ```compile_fail,E0425
/// let _ = leasefence::protocol::state_json;
/// ```
pub struct TypedAnswer;

/// rusqlite is not re-exported: depend on it yourself for the escape hatches that name its
/// types (`LeaseStore::connection`, the SQLite guard):
///
/// ```compile_fail,E0432
/// use leasefence::rusqlite;
/// ```
pub struct ClientCrates;

/// Which tables a fenced write may not touch is the crate's rule, not an API:
///
/// ```compile_fail,E0432
/// use leasefence::is_library_table;
/// ```
pub struct LibraryTables;

/// A storage error does not hand out the client's error type; its source is a `SqliteError`:
///
/// ```compile_fail,E0308
/// fn raw(err: leasefence::Error) -> Option<rusqlite::Error> {
///     match err {
///         leasefence::Error::Storage { source, .. } => Some(source),
///         _ => None,
///     }
/// }
/// ```
pub struct ClientErrors;
