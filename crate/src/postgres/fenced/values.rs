//! [`SqlValue`]s to and from PostgreSQL: a parameter bound to the type the server inferred for
//! it (checked to fit first), and a row's value read back by its column's type.

use bytes::BytesMut;
use postgres::types::{IsNull, ToSql, Type};
use postgres::Row;

use crate::error::{Error, Result};
use crate::rules::fenced::SqlValue;

/// A parameter bound to the type PostgreSQL inferred for it, checked before it is sent.
#[derive(Debug)]
pub(super) struct Bound<'a>(pub(super) &'a SqlValue);

const TEXT_TYPES: [Type; 5] = [
    Type::TEXT,
    Type::VARCHAR,
    Type::BPCHAR,
    Type::NAME,
    Type::UNKNOWN,
];

pub(super) fn fits(value: &SqlValue, ty: &Type) -> bool {
    let int = matches!(*ty, Type::INT2 | Type::INT4 | Type::INT8);
    let float = matches!(*ty, Type::FLOAT4 | Type::FLOAT8);
    let text = TEXT_TYPES.contains(ty);
    let json = matches!(*ty, Type::JSON | Type::JSONB);
    match value {
        SqlValue::Null => true,
        SqlValue::Bool(_) => *ty == Type::BOOL || int,
        SqlValue::Integer(n) => match *ty {
            Type::INT2 => i16::try_from(*n).is_ok(),
            Type::INT4 => i32::try_from(*n).is_ok(),
            _ => int || float || text,
        },
        SqlValue::Real(f) => float || text || (int && f.fract() == 0.0 && f.abs() < 9.2e18),
        SqlValue::Text(_) => text || json,
    }
}

impl ToSql for Bound<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match (self.0, ty) {
            (SqlValue::Null, _) => Ok(IsNull::Yes),
            (SqlValue::Bool(b), &Type::BOOL) => b.to_sql(ty, out),
            (SqlValue::Bool(b), _) => Bound(&SqlValue::Integer(i64::from(*b))).to_sql(ty, out),
            (SqlValue::Integer(n), &Type::INT2) => (*n as i16).to_sql(ty, out),
            (SqlValue::Integer(n), &Type::INT4) => (*n as i32).to_sql(ty, out),
            (SqlValue::Integer(n), &Type::INT8) => n.to_sql(ty, out),
            (SqlValue::Integer(n), &Type::FLOAT4) => (*n as f32).to_sql(ty, out),
            (SqlValue::Integer(n), &Type::FLOAT8) => (*n as f64).to_sql(ty, out),
            (SqlValue::Integer(n), _) => n.to_string().as_str().to_sql(&Type::TEXT, out),
            (SqlValue::Real(f), &Type::FLOAT4) => (*f as f32).to_sql(ty, out),
            (SqlValue::Real(f), &Type::FLOAT8) => f.to_sql(ty, out),
            (SqlValue::Real(f), &Type::INT2 | &Type::INT4 | &Type::INT8) => {
                Bound(&SqlValue::Integer(*f as i64)).to_sql(ty, out)
            }
            (SqlValue::Real(f), _) => f.to_string().as_str().to_sql(&Type::TEXT, out),
            (SqlValue::Text(t), &Type::JSONB) => {
                out.extend_from_slice(&[1]);
                out.extend_from_slice(t.as_bytes());
                Ok(IsNull::No)
            }
            (SqlValue::Text(t), _) => t.as_str().to_sql(&Type::TEXT, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

/// One value of a fenced query's row as a [`SqlValue`], by the column's type; a type with no such
/// value (numeric, a date, JSON, ...) is refused with the hint to cast it.
pub(super) fn neutral_value(row: &Row, i: usize) -> Result<SqlValue> {
    let column = &row.columns()[i];
    let got = |e: postgres::Error| Error::Internal {
        message: format!("reading column {:?} of a fenced query: {e}", column.name()),
    };
    let ty = column.type_();
    Ok(match *ty {
        Type::BOOL => row.try_get::<_, Option<bool>>(i).map_err(got)?.into(),
        Type::INT2 => row
            .try_get::<_, Option<i16>>(i)
            .map_err(got)?
            .map(i64::from)
            .into(),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(i)
            .map_err(got)?
            .map(i64::from)
            .into(),
        Type::INT8 => row.try_get::<_, Option<i64>>(i).map_err(got)?.into(),
        Type::FLOAT4 => row
            .try_get::<_, Option<f32>>(i)
            .map_err(got)?
            .map(f64::from)
            .into(),
        Type::FLOAT8 => row.try_get::<_, Option<f64>>(i).map_err(got)?.into(),
        _ if TEXT_TYPES.contains(ty) => row.try_get::<_, Option<String>>(i).map_err(got)?.into(),
        _ => {
            return Err(Error::invalid(
                "statements",
                format!(
                    "column {:?} is of type {ty}, which has no SqlValue: cast it in the SQL \
                     ({0}::text, or ::bigint, ::float8)",
                    column.name()
                ),
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_fit_their_inferred_types() {
        assert!(fits(&SqlValue::Integer(3), &Type::INT8));
        assert!(!fits(&SqlValue::Integer(1 << 40), &Type::INT4));
        assert!(fits(&SqlValue::Null, &Type::BYTEA));
        assert!(!fits(&SqlValue::Text("x".into()), &Type::INT8));
        assert!(fits(&SqlValue::Bool(true), &Type::BOOL));
        assert!(!fits(&SqlValue::Real(1.5), &Type::INT8));
        assert!(fits(&SqlValue::Real(2.0), &Type::INT8));
    }
}
