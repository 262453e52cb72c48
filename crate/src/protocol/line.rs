//! A protocol line as a request: the JSON object's fields read as the reader's [`Source`], every
//! shape problem a `bad_request` [`Response`].

use super::json::{self, Json};
use super::{FencedArgs, Members, Op, Request, Response, Source, OPS};
use crate::error::Error;
use crate::outcome::Fence;
use crate::rules::fenced::{SqlValue, Statement};

const STATEMENTS_SHAPE: &str = "an array of {\"sql\": \"...\", \"params\": [...]}";

/// Reads the fields of one request object, turning every shape problem into `bad_request`: the
/// protocol's [`Source`].
struct Fields<'a> {
    object: &'a Json,
    op: &'a str,
    /// For one item of a list (`jobs[2]`): the list's name and the item's index. The members an
    /// item may have are exactly those read from it.
    item: Option<(&'static str, usize)>,
    /// The members read so far (items only).
    read: Vec<&'static str>,
    /// A value error found while reading the shape; reported only if the shape is fine, so
    /// shape errors (`bad_request`) always win over value errors (`invalid_argument`).
    deferred: Option<Response>,
}

impl<'a> Fields<'a> {
    fn request(object: &'a Json, op: &'a str) -> Self {
        Fields {
            object,
            op,
            item: None,
            read: Vec::new(),
            deferred: None,
        }
    }

    /// Records that `name` was asked for (an item's allowed members).
    fn asked(&mut self, name: &'static str) -> &mut Self {
        if self.item.is_some() {
            self.read.push(name);
        }
        self
    }
}

impl Members for Fields<'_> {
    type Error = Response;
    fn string(&mut self, name: &'static str) -> Result<String, Response> {
        Fields::string(self.asked(name), name)
    }
    fn optional_string(&mut self, name: &'static str) -> Result<Option<String>, Response> {
        Fields::optional_string(self.asked(name), name)
    }
    fn number(&mut self, name: &'static str) -> Result<f64, Response> {
        Fields::number(self.asked(name), name)
    }
    fn maybe_string(&mut self, name: &'static str) -> Result<Option<String>, Response> {
        match self.asked(name).object.get(name) {
            None => Ok(None),
            Some(_) => Fields::optional_string(self, name),
        }
    }
    fn maybe_number(&mut self, name: &'static str) -> Result<Option<f64>, Response> {
        match self.asked(name).object.get(name) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::Number(n)) => Ok(Some(n.float)),
            Some(other) => Err(self.mistyped(name, "a number or null", other)),
        }
    }
    fn fence(&mut self, name: &'static str) -> Result<Fence, Response> {
        Fields::fence(self.asked(name), name)
    }
    fn maybe_bool(&mut self, name: &'static str) -> Result<Option<bool>, Response> {
        match self.asked(name).object.get(name) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.mistyped(name, "a boolean or null", other)),
        }
    }
    fn maybe_integer(&mut self, name: &'static str) -> Result<Option<i64>, Response> {
        let n = match self.asked(name).object.get(name) {
            None | Some(Json::Null) => return Ok(None),
            Some(Json::Number(n)) => n,
            Some(other) => return Err(self.mistyped(name, "an integer or null", other)),
        };
        if let Some(int) = n.int {
            return Ok(Some(int));
        }
        // -2^63 is exact in f64; 2^63 is the first float past i64::MAX.
        let whole = n.float.is_finite() && n.float.fract() == 0.0 && !n.integral_lexeme;
        if whole && n.float >= -9_223_372_036_854_775_808.0 && n.float < 9_223_372_036_854_775_808.0
        {
            return Ok(Some(n.float as i64));
        }
        if self.deferred.is_none() {
            self.deferred = Some(Response::failed(&Error::invalid(
                name,
                format!("must be an integer from -2^63 to 2^63-1, got {}", n.float),
            )));
        }
        Ok(Some(0))
    }
}

impl<'a> Source for Fields<'a> {
    type Item = Fields<'a>;
    fn count(&mut self, name: &'static str) -> Result<usize, Response> {
        Fields::count(self, name)
    }
    fn objects<T>(
        &mut self,
        name: &'static str,
        mut read: impl FnMut(&mut Fields<'a>) -> Result<T, Response>,
    ) -> Result<Vec<T>, Response> {
        let object: &'a Json = self.object;
        let items = match object.get(name) {
            Some(Json::Array(items)) => items,
            Some(other) => return Err(self.mistyped(name, "an array of objects", other)),
            None => return Err(self.missing(name, "an array of objects")),
        };
        let mut values = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let Json::Object(members) = item else {
                return Err(Response::bad_request(format!(
                    "{name}[{index}] of op {:?} must be an object, got {}",
                    self.op,
                    item.type_name()
                )));
            };
            let mut fields = Fields {
                object: item,
                op: self.op,
                item: Some((name, index)),
                read: Vec::new(),
                deferred: None,
            };
            values.push(read(&mut fields)?);
            if let Some((key, _)) = members
                .iter()
                .find(|(k, _)| !fields.read.contains(&k.as_str()))
            {
                return Err(Response::bad_request(format!(
                    "{name}[{index}] of op {:?} has the member {key:?}; it takes only {}",
                    self.op,
                    fields
                        .read
                        .iter()
                        .map(|m| format!("{m:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            if self.deferred.is_none() {
                self.deferred = fields.deferred;
            }
        }
        Ok(values)
    }
    fn strings(&mut self, name: &'static str) -> Result<Vec<String>, Response> {
        Fields::strings(self, name)
    }
    fn maybe_strings(&mut self, name: &'static str) -> Result<Option<Vec<String>>, Response> {
        match self.object.get(name) {
            None | Some(Json::Null) => Ok(None),
            Some(_) => Fields::strings(self, name).map(Some),
        }
    }
    fn fenced_writes(&mut self) -> Result<FencedArgs, Response> {
        Fields::fenced_writes(self)
    }
    fn maybe_statements(&mut self, name: &'static str) -> Result<Option<Vec<Statement>>, Response> {
        match self.object.get(name) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::Array(items)) => items
                .iter()
                .map(|item| self.statement(item))
                .collect::<Result<_, _>>()
                .map(Some),
            Some(other) => Err(self.mistyped(name, STATEMENTS_SHAPE, other)),
        }
    }

    fn options<T>(
        &mut self,
        _name: &'static str,
        read: impl FnOnce(&mut Fields<'a>) -> Result<T, Response>,
    ) -> Result<T, Response> {
        // The protocol's options are members of the request itself.
        read(self)
    }
    fn finish(self) -> Result<(), Response> {
        match self.deferred {
            Some(value_error) => Err(value_error),
            None => Ok(()),
        }
    }
}

impl Fields<'_> {
    /// Where field `name` is, for messages: `field "job" of op "state"`, or for an item
    /// `member "job" of leases[2] of op "renew_many"`.
    fn place(&self, name: &str) -> String {
        match self.item {
            None => format!("field {name:?} of op {:?}", self.op),
            Some((list, index)) => {
                format!("member {name:?} of {list}[{index}] of op {:?}", self.op)
            }
        }
    }

    fn missing(&self, name: &str, kind: &str) -> Response {
        match self.item {
            None => Response::bad_request(format!(
                "op {:?} needs field {name:?} ({kind}); it is missing",
                self.op
            )),
            Some(_) => Response::bad_request(format!("{} ({kind}) is missing", self.place(name))),
        }
    }

    fn mistyped(&self, name: &str, kind: &str, got: &Json) -> Response {
        Response::bad_request(format!(
            "{} must be {kind}, got {}",
            self.place(name),
            got.type_name()
        ))
    }

    /// A count: a number (else `bad_request`) that is a whole number from 0 up (else
    /// `invalid_argument`, held back); its range is checked with the other values.
    fn count(&mut self, name: &'static str) -> Result<usize, Response> {
        let n = match self.object.get(name) {
            Some(Json::Number(n)) => *n,
            Some(other) => return Err(self.mistyped(name, "a whole number", other)),
            None => return Err(self.missing(name, "a whole number")),
        };
        if n.float.is_finite() && n.float >= 0.0 && n.float.fract() == 0.0 {
            // Past usize the count is out of range anyway; the range check names the bound.
            return Ok(if n.float < usize::MAX as f64 {
                n.float as usize
            } else {
                usize::MAX
            });
        }
        if self.deferred.is_none() {
            self.deferred = Some(Response::failed(&Error::invalid(
                name,
                format!("must be a whole number of jobs to claim, got {}", n.float),
            )));
        }
        Ok(1)
    }

    fn string(&self, name: &str) -> Result<String, Response> {
        match self.object.get(name) {
            Some(Json::String(s)) => Ok(s.clone()),
            Some(other) => Err(self.mistyped(name, "a string", other)),
            None => Err(self.missing(name, "a string")),
        }
    }

    fn optional_string(&self, name: &str) -> Result<Option<String>, Response> {
        match self.object.get(name) {
            Some(Json::String(s)) => Ok(Some(s.clone())),
            Some(Json::Null) => Ok(None),
            Some(other) => Err(self.mistyped(name, "a string or null", other)),
            None => Err(self.missing(name, "a string or null")),
        }
    }

    fn number(&self, name: &str) -> Result<f64, Response> {
        match self.object.get(name) {
            Some(Json::Number(n)) => Ok(n.float),
            Some(other) => Err(self.mistyped(name, "a number", other)),
            None => Err(self.missing(name, "a number")),
        }
    }

    /// A fence: an integer. Integral values written as floats (`2.0`) are accepted; values
    /// outside i64 and non-finite values are `invalid_argument`.
    fn fence(&mut self, name: &str) -> Result<Fence, Response> {
        let n = match self.object.get(name) {
            Some(Json::Number(n)) => n,
            Some(other) => return Err(self.mistyped(name, "an integer", other)),
            None => return Err(self.missing(name, "an integer")),
        };
        if let Some(int) = n.int {
            return Ok(int);
        }
        let mut out_of_range = || {
            self.deferred = Some(Response::failed(&Error::invalid(
                "fence",
                "is out of range: fences are integers from -2^63 to 2^63-1",
            )));
            Ok(0)
        };
        if n.integral_lexeme || !n.float.is_finite() {
            return out_of_range();
        }
        if n.float.fract() != 0.0 {
            return Err(Response::bad_request(format!(
                "{} must be an integer, got {}",
                self.place(name),
                n.float
            )));
        }
        // -2^63 is exact in f64; 2^63 is the first float past i64::MAX.
        if n.float >= -9_223_372_036_854_775_808.0 && n.float < 9_223_372_036_854_775_808.0 {
            Ok(n.float as i64)
        } else {
            out_of_range()
        }
    }

    /// `statements` (an array of `{"sql": S, "params": [...]}`, params optional), `complete`
    /// (a boolean, default false) and `result` (a string or null, default null).
    fn fenced_writes(&self) -> Result<FencedArgs, Response> {
        let items = match self.object.get("statements") {
            Some(Json::Array(items)) => items,
            Some(other) => return Err(self.mistyped("statements", STATEMENTS_SHAPE, other)),
            None => return Err(self.missing("statements", STATEMENTS_SHAPE)),
        };
        let statements = items
            .iter()
            .map(|item| self.statement(item))
            .collect::<Result<_, _>>()?;
        let complete = match self.object.get("complete") {
            None => false,
            Some(Json::Bool(b)) => *b,
            Some(other) => return Err(self.mistyped("complete", "a boolean", other)),
        };
        let result = match self.object.get("result") {
            None | Some(Json::Null) => None,
            Some(Json::String(s)) => Some(s.clone()),
            Some(other) => return Err(self.mistyped("result", "a string or null", other)),
        };
        Ok(FencedArgs {
            statements,
            complete,
            result,
        })
    }

    fn statement(&self, item: &Json) -> Result<Statement, Response> {
        let Json::Object(members) = item else {
            return Err(self.mistyped("statements", STATEMENTS_SHAPE, item));
        };
        if let Some((key, _)) = members.iter().find(|(k, _)| k != "sql" && k != "params") {
            return Err(Response::bad_request(format!(
                "a statement of op {:?} has the member {key:?}; only \"sql\" and \"params\"",
                self.op
            )));
        }
        let sql = match item.get("sql") {
            Some(Json::String(s)) => s.clone(),
            _ => return Err(self.mistyped("statements", STATEMENTS_SHAPE, item)),
        };
        let params = match item.get("params") {
            None => Vec::new(),
            Some(Json::Array(values)) => values
                .iter()
                .map(|value| match value {
                    Json::Null => Ok(SqlValue::Null),
                    Json::Bool(b) => Ok(SqlValue::Bool(*b)),
                    Json::Number(n) => Ok(n.int.map_or(SqlValue::Real(n.float), SqlValue::Integer)),
                    Json::String(s) => Ok(SqlValue::Text(s.clone())),
                    other => {
                        Err(self.mistyped("params", "null, a number, a string or a boolean", other))
                    }
                })
                .collect::<Result<_, _>>()?,
            Some(other) => return Err(self.mistyped("params", "an array", other)),
        };
        Ok(Statement { sql, params })
    }

    fn strings(&self, name: &str) -> Result<Vec<String>, Response> {
        match self.object.get(name) {
            Some(Json::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Json::String(s) => Ok(s.clone()),
                    other => Err(self.mistyped(name, "an array of strings", other)),
                })
                .collect(),
            Some(other) => Err(self.mistyped(name, "an array of strings", other)),
            None => Err(self.missing(name, "an array of strings")),
        }
    }
}

impl Request {
    /// Parses one protocol line. Shape problems (not JSON, not an object, unknown op, missing or
    /// mistyped field) come back as a `bad_request` [`Response`]; value checks are left to
    /// [`Request::validate`].
    ///
    /// ```
    /// use leasefence::protocol::Request;
    /// assert!(Request::parse(r#"{"op":"fly"}"#).is_err());
    /// ```
    pub fn parse(line: &str) -> Result<Request, Response> {
        let value = json::parse(line)
            .map_err(|err| Response::bad_request(format!("the line is not valid JSON: {err}")))?;
        if !matches!(value, Json::Object(_)) {
            return Err(Response::bad_request(format!(
                "a request must be a JSON object like {{\"op\": \"state\", \"job\": \"j\"}}, got {}",
                value.type_name()
            )));
        }
        let op = match value.get("op") {
            Some(Json::String(op)) => op.as_str(),
            Some(other) => {
                return Err(Response::bad_request(format!(
                    "field \"op\" must be a string, got {}",
                    other.type_name()
                )))
            }
            None => {
                return Err(Response::bad_request(format!(
                    "the request has no \"op\"; use one of {}",
                    OPS.join(", ")
                )))
            }
        };
        let Some(op_kind) = Op::from_protocol(op) else {
            return Err(Response::bad_request(format!(
                "unknown op {op:?}; use one of {}",
                OPS.join(", ")
            )));
        };
        Request::read(op_kind, Fields::request(&value, op))
    }
}

#[cfg(test)]
mod tests {
    use super::{Request, Response};

    fn refusal(line: &str) -> (&'static str, String) {
        match Request::parse(line).and_then(|request| {
            request
                .validate()
                .map(|()| request)
                .map_err(|err| Response::failed(&err))
        }) {
            Err(Response::Failed { code, message }) => (code, message),
            other => panic!("{line} was accepted: {other:?}"),
        }
    }

    #[test]
    fn a_batch_item_error_names_the_list_the_index_and_the_member() {
        let (code, message) =
            refusal(r#"{"op":"enqueue_many","jobs":[{"job":"a"},{"job":"b","runAt":5}]}"#);
        assert_eq!(code, "bad_request");
        assert!(
            message.contains("jobs[1]") && message.contains("\"runAt\""),
            "{message}"
        );
        assert!(
            message.contains("\"run_at\""),
            "names what it takes: {message}"
        );
        let (code, message) =
            refusal(r#"{"op":"renew_many","owner":"w","leases":[{"job":"a"}],"now":0,"ttl":1}"#);
        assert_eq!(code, "bad_request");
        assert!(
            message.contains("member \"fence\" of leases[0]"),
            "{message}"
        );
    }

    #[test]
    fn a_shape_error_in_a_later_item_beats_a_value_error_in_an_earlier_one() {
        let line = r#"{"op":"complete_many","owner":"w","now":0,
            "leases":[{"job":"a","fence":1e30},{"job":"b","fence":"1"}]}"#;
        assert_eq!(refusal(line).0, "bad_request");
        let line = r#"{"op":"complete_many","owner":"w","now":0,
            "leases":[{"job":"a","fence":1e30},{"job":"b","fence":1}]}"#;
        assert_eq!(refusal(line).0, "invalid_argument");
        // The list's own bound is a value: checked after every item's shape.
        let items = vec![r#"{"job":"a","fence":1}"#; 1025].join(",");
        let line = format!(
            r#"{{"op":"renew_many","owner":"w","now":0,"ttl":1,"leases":[{items},{{"job":2,"fence":1}}]}}"#
        );
        assert_eq!(refusal(&line).0, "bad_request");
        let line =
            format!(r#"{{"op":"renew_many","owner":"w","now":0,"ttl":1,"leases":[{items}]}}"#);
        let (code, message) = refusal(&line);
        assert_eq!(code, "invalid_argument");
        assert!(
            message.contains("1025") && message.contains("split it"),
            "{message}"
        );
    }
}
