//! [`SqlValue`] parameters bound by position: `$N` (or `?NNN`) takes the N-th, a plain `?` the
//! next; named parameters are refused.

use crate::error::{Error, Result};
use crate::rules::fenced::SqlValue;

/// The position in `params` of the parameter SQLite numbers `index` (1-based) and names `name`.
fn position(index: usize, name: Option<&str>) -> Result<usize> {
    let numbered = |digits: &str| digits.parse::<usize>().ok().filter(|n| *n >= 1);
    match name {
        None => Ok(index),
        Some(name) => match name
            .strip_prefix('$')
            .or_else(|| name.strip_prefix('?'))
            .and_then(numbered)
        {
            Some(n) => Ok(n),
            None => Err(Error::invalid(
                "statements",
                format!(
                    "parameter {name} is named; write $1, $2, ... (taken from params in order)"
                ),
            )),
        },
    }
}

pub(super) fn bind_values(stmt: &mut rusqlite::Statement<'_>, params: &[SqlValue]) -> Result<()> {
    let count = stmt.parameter_count();
    let mut highest = 0;
    for index in 1..=count {
        let n = position(index, stmt.parameter_name(index))?;
        highest = highest.max(n);
        let Some(value) = params.get(n - 1) else {
            return Err(Error::invalid(
                "statements",
                format!(
                    "the statement uses parameter {n}, but only {} were given",
                    params.len()
                ),
            ));
        };
        let bound = match value {
            SqlValue::Null => stmt.raw_bind_parameter(index, rusqlite::types::Null),
            SqlValue::Integer(n) => stmt.raw_bind_parameter(index, n),
            SqlValue::Real(f) => stmt.raw_bind_parameter(index, f),
            SqlValue::Text(t) => stmt.raw_bind_parameter(index, t),
            SqlValue::Bool(b) => stmt.raw_bind_parameter(index, i64::from(*b)),
        };
        bound.map_err(Error::storage("fenced"))?;
    }
    if params.len() > highest {
        return Err(Error::invalid(
            "statements",
            format!(
                "{} parameters given, but the statement uses {highest}: \
                 each parameter needs its $N",
                params.len()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_positions() {
        assert_eq!(position(1, None).unwrap(), 1);
        assert_eq!(position(1, Some("$2")).unwrap(), 2);
        assert_eq!(position(1, Some("?3")).unwrap(), 3);
        assert!(position(1, Some(":name")).is_err());
        assert!(position(1, Some("$0")).is_err());
    }
}
