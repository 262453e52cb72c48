//! Fenced writes' JavaScript arguments (docs/contract.md section 8): statement lists
//! `[{sql, params}]`, their parameters, and the options `{complete, result}`.

use super::{bad, ArgError, JsArg};
use crate::protocol::FencedArgs;
use crate::rules::fenced::{SqlValue, Statement};

/// A JavaScript parameter as SQL: null/undefined, a boolean, a number (a safe integer binds as
/// an integer), a string, or a BigInt within 64 bits.
fn sql_value<V: JsArg>(op: &str, value: &V) -> Result<SqlValue, ArgError> {
    if value.is_null() || value.is_undefined() {
        return Ok(SqlValue::Null);
    }
    if let Some(b) = value.as_bool() {
        return Ok(SqlValue::Bool(b));
    }
    if let Some(f) = value.as_f64() {
        if !f.is_finite() {
            return Err(bad(
                op,
                "a parameter is NaN or infinite, which SQL cannot store",
            ));
        }
        return Ok(if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_991.0 {
            SqlValue::Integer(f as i64)
        } else {
            SqlValue::Real(f)
        });
    }
    if let Some(s) = value.as_string() {
        return Ok(SqlValue::Text(s));
    }
    match value.as_bigint() {
        Some(Ok(n)) => Ok(SqlValue::Integer(n)),
        Some(Err(())) => Err(bad(op, "a BigInt parameter is outside 64 bits")),
        None => Err(bad(
            op,
            "parameters must be null, booleans, numbers, strings or BigInts",
        )),
    }
}

/// A statement's `params`: an array (or nothing: no parameters).
pub(crate) fn sql_values<V: JsArg>(op: &str, params: &V) -> Result<Vec<SqlValue>, ArgError> {
    if params.is_undefined() || params.is_null() {
        return Ok(Vec::new());
    }
    if !params.is_array() {
        return Err(bad(op, "`params` must be an array"));
    }
    params.items().iter().map(|v| sql_value(op, v)).collect()
}

/// `statements` (an array of `{sql, params}`) and `options` (`{complete, result}` or undefined).
pub(crate) fn fenced_args<V: JsArg>(
    op: &str,
    statements: &V,
    options: &V,
) -> Result<FencedArgs, ArgError> {
    if !statements.is_array() {
        return Err(bad(
            op,
            "argument `statements` must be an array of {sql, params} (or, in Node, a callback)",
        ));
    }
    let statements = statements_of(op, statements)?;
    let (complete, result) = fenced_options(op, options)?;
    Ok(FencedArgs {
        statements,
        complete,
        result,
    })
}

/// An array of `{sql, params}` as statements.
pub(crate) fn statements_of<V: JsArg>(
    op: &str,
    statements: &V,
) -> Result<Vec<Statement>, ArgError> {
    if !statements.is_array() {
        return Err(bad(
            op,
            "argument `statements` must be an array of {sql, params}",
        ));
    }
    statements
        .items()
        .iter()
        .map(|item| {
            if !item.is_object() {
                return Err(bad(op, "each statement must be an object {sql, params}"));
            }
            let sql = item
                .member("sql")
                .as_string()
                .ok_or_else(|| bad(op, "a statement's `sql` must be a string"))?;
            let params = sql_values(op, &item.member("params"))?;
            Ok(Statement { sql, params })
        })
        .collect()
}

/// A fenced write's options `{complete?, result?}` (or nothing): whether the job completes with
/// the write, and its result.
pub(crate) fn fenced_options<V: JsArg>(
    op: &str,
    options: &V,
) -> Result<(bool, Option<String>), ArgError> {
    if options.is_undefined() || options.is_null() {
        return Ok((false, None));
    }
    if !options.is_object() {
        return Err(bad(op, "argument `options` must be {complete?, result?}"));
    }
    let complete = options.member("complete");
    let complete = if complete.is_undefined() {
        false
    } else {
        complete
            .as_bool()
            .ok_or_else(|| bad(op, "`options.complete` must be a boolean"))?
    };
    let result = options.member("result");
    let result = if result.is_undefined() || result.is_null() {
        None
    } else {
        Some(
            result
                .as_string()
                .ok_or_else(|| bad(op, "`options.result` must be a string or null"))?,
        )
    };
    Ok((complete, result))
}
