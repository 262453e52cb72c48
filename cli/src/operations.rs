//! `leasefence operations`: the protocol's operations ([`leasefence::protocol::operations`]) as
//! JSON, for generating bindings in other languages.

use leasefence::protocol::{operations, Parameter};
use serde_json::{json, Value};

use crate::exit::EXIT_OK;

fn parameter(p: &Parameter) -> Value {
    let mut value = json!({
        "name": p.name,
        "kind": p.kind,
        "optional": p.optional,
        "nullable": p.nullable,
    });
    if !p.members.is_empty() {
        value["members"] = p.members.iter().map(parameter).collect();
    }
    value
}

/// The catalogue as a JSON array, one object per operation in the protocol's order.
pub(crate) fn catalogue() -> Value {
    operations()
        .iter()
        .map(|op| {
            json!({
                "name": op.name,
                "jsName": op.js_name,
                "parameters": op.parameters.iter().map(parameter).collect::<Vec<_>>(),
                "answer": op.answer,
                "doc": op.doc,
            })
        })
        .collect()
}

pub(crate) fn print() -> i32 {
    println!(
        "{}",
        serde_json::to_string_pretty(&catalogue()).unwrap_or_default()
    );
    EXIT_OK
}
