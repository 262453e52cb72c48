//! The `jobs` table of docs/contract.md section 1 as data, and the one comparer both backends
//! check an existing table with. Each backend reads the catalog its own way and says, through a
//! [`Dialect`], how it spells a type and a default; what counts as the contract's shape is
//! decided here once.

/// One column of the contract's `jobs` table.
pub(crate) struct ColumnSpec {
    pub(crate) name: &'static str,
    /// The declared type on SQLite.
    pub(crate) sqlite_type: &'static str,
    /// The type on PostgreSQL, as `format_type` spells it.
    #[cfg_attr(not(all(feature = "postgres", not(web))), allow(dead_code))]
    pub(crate) postgres_type: &'static str,
    pub(crate) not_null: bool,
    pub(crate) default: Option<&'static str>,
    pub(crate) primary_key: bool,
}

/// The six columns, in order.
pub(crate) const JOBS_COLUMNS: [ColumnSpec; 6] = [
    column("id", "TEXT", "text", false, None, true),
    column("owner", "TEXT", "text", false, None, false),
    column("until", "REAL", "double precision", true, Some("0"), false),
    column("fence", "INTEGER", "bigint", true, Some("0"), false),
    column("result", "TEXT", "text", false, None, false),
    column("done", "INTEGER", "integer", true, Some("0"), false),
];

const fn column(
    name: &'static str,
    sqlite_type: &'static str,
    postgres_type: &'static str,
    not_null: bool,
    default: Option<&'static str>,
    primary_key: bool,
) -> ColumnSpec {
    ColumnSpec {
        name,
        sqlite_type,
        postgres_type,
        not_null,
        default,
        primary_key,
    }
}

/// A column as a backend's catalog describes it.
pub(crate) struct FoundColumn {
    pub(crate) name: String,
    pub(crate) ty: String,
    pub(crate) not_null: bool,
    pub(crate) default: Option<String>,
    pub(crate) primary_key: bool,
}

/// How one backend spells what its catalog reports.
pub(crate) trait Dialect {
    /// Whether a primary key is always `NOT NULL` there (PostgreSQL), so that the catalog
    /// reports it so and descriptions leave it out.
    const PRIMARY_KEY_IMPLIES_NOT_NULL: bool;

    /// The column's type on this backend.
    fn column_type(spec: &ColumnSpec) -> &'static str;

    /// Whether a catalog name or type is the expected one.
    fn same_word(found: &str, want: &str) -> bool;

    /// A default as compared with the spec's (`'0'::double precision` is `0`).
    fn normalise_default(default: &str) -> String;

    /// A found default as descriptions show it.
    fn shown_default(default: &str) -> String;
}

/// Where a table first differs from the spec.
pub(crate) enum Mismatch {
    /// Not six columns.
    Count,
    /// The column at this position differs.
    Column(usize),
}

fn not_null_of<D: Dialect>(spec: &ColumnSpec) -> bool {
    spec.not_null || (spec.primary_key && D::PRIMARY_KEY_IMPLIES_NOT_NULL)
}

/// Compares `found` with [`JOBS_COLUMNS`], column by column, in order.
pub(crate) fn compare<D: Dialect>(found: &[FoundColumn]) -> Result<(), Mismatch> {
    if found.len() != JOBS_COLUMNS.len() {
        return Err(Mismatch::Count);
    }
    for (i, (got, want)) in found.iter().zip(&JOBS_COLUMNS).enumerate() {
        let default_ok = match (got.default.as_deref(), want.default) {
            (None, None) => true,
            (Some(got), Some(want)) => D::normalise_default(got) == want,
            _ => false,
        };
        if !D::same_word(&got.name, want.name)
            || !D::same_word(&got.ty, D::column_type(want))
            || got.not_null != not_null_of::<D>(want)
            || !default_ok
            || got.primary_key != want.primary_key
        {
            return Err(Mismatch::Column(i));
        }
    }
    Ok(())
}

fn describe<D: Dialect>(
    name: &str,
    ty: &str,
    not_null: bool,
    default: Option<&str>,
    primary_key: bool,
) -> String {
    let mut text = format!("{name} {ty}");
    if primary_key {
        text.push_str(" PRIMARY KEY");
    }
    if not_null && !(primary_key && D::PRIMARY_KEY_IMPLIES_NOT_NULL) {
        text.push_str(" NOT NULL");
    }
    if let Some(default) = default {
        text.push_str(&format!(" DEFAULT {default}"));
    }
    text
}

/// The spec's columns as this backend would declare them (`until REAL NOT NULL DEFAULT 0`).
pub(crate) fn describe_expected<D: Dialect>() -> Vec<String> {
    JOBS_COLUMNS
        .iter()
        .map(|c| {
            describe::<D>(
                c.name,
                D::column_type(c),
                not_null_of::<D>(c),
                c.default,
                c.primary_key,
            )
        })
        .collect()
}

/// A found column, described like [`describe_expected`]'s.
pub(crate) fn describe_found<D: Dialect>(column: &FoundColumn) -> String {
    describe::<D>(
        &column.name,
        &column.ty,
        column.not_null,
        column.default.as_deref().map(D::shown_default).as_deref(),
        column.primary_key,
    )
}
