//! An operation's positional JavaScript arguments read into a protocol request: the
//! [`Source`] of both JavaScript faces. Every bad argument is `invalid_argument`, named in
//! positional order.

use super::{bad_value, safe_integer, statements, ArgError, JsArg};
use crate::outcome::Fence;
use crate::protocol::{FencedArgs, Members, Op, Request, Source};

const FENCE_WANTED: &str = "an integer number (a fence from claim)";
const INTEGER_WANTED: &str = "an integer number within ±(2^53 - 1), null or undefined";

/// Reads the request of the operation named `op` (its JavaScript name: `claimNext`) from its
/// positional arguments. `undefined` is what a missing argument reads as.
pub(crate) fn read_request<V: JsArg + Clone>(
    op: &str,
    args: &[V],
    undefined: &V,
) -> Result<Request, ArgError> {
    let Some(kind) = Op::from_js(op) else {
        return Err(ArgError(format!("unknown operation {op:?}")));
    };
    Request::read(
        kind,
        Args {
            op,
            args,
            undefined,
            next: 0,
        },
    )
}

/// Reads and checks (ranges included, [`Request::validate`]) without running anything.
pub(crate) fn check_request<V: JsArg + Clone>(
    op: &str,
    args: &[V],
    undefined: &V,
) -> Result<Request, ArgError> {
    let request = read_request(op, args, undefined)?;
    request.validate()?;
    Ok(request)
}

/// The lease and time of a callback-form fenced write (`job, owner, fence, now`), checked as
/// `call('fenced', ...)` checks them.
pub(crate) fn lease_args<V: JsArg + Clone>(
    positional: &[V],
    undefined: &V,
) -> Result<(crate::Lease, f64), ArgError> {
    let mut args = Args {
        op: "fenced",
        args: positional,
        undefined,
        next: 0,
    };
    let job = Members::string(&mut args, "job")?;
    let owner = Members::string(&mut args, "owner")?;
    let lease = crate::Lease::new(job, owner, Members::fence(&mut args, "fence")?);
    let now = Members::number(&mut args, "now")?;
    Ok((lease, now))
}

/// The positional arguments of one call, read in the operation's order with a cursor.
struct Args<'a, V> {
    op: &'a str,
    args: &'a [V],
    undefined: &'a V,
    next: usize,
}

impl<'a, V: JsArg + Clone> Args<'a, V> {
    /// The next argument (`undefined` past the end).
    fn take(&mut self) -> &'a V {
        self.next += 1;
        self.args.get(self.next - 1).unwrap_or(self.undefined)
    }

    fn bad(&self, name: &str, want: &str, got: &V) -> ArgError {
        bad_value(self.op, &format!("argument `{name}`"), want, got)
    }

    /// An optional argument: undefined (left out) and null are both none.
    fn maybe<T>(
        &mut self,
        name: &str,
        want: &str,
        convert: impl Fn(&V) -> Option<T>,
    ) -> Result<Option<T>, ArgError> {
        let value = self.take();
        if value.is_undefined() || value.is_null() {
            return Ok(None);
        }
        convert(value)
            .map(Some)
            .ok_or_else(|| self.bad(name, want, value))
    }

    fn strings_of(&self, value: &V, name: &str) -> Result<Vec<String>, ArgError> {
        if !value.is_array() {
            return Err(self.bad(name, "an array of strings", value));
        }
        value
            .items()
            .iter()
            .map(|item| {
                item.as_string()
                    .ok_or_else(|| self.bad(name, "an array of strings", item))
            })
            .collect()
    }

    /// A lone options object (`schedule(name, cron, {tz, queue})`) read as one item.
    fn object_member(&self, list: &'static str, index: Option<usize>, object: V) -> Member<'a, V> {
        Member {
            op: self.op,
            list,
            index,
            object,
            undefined: self.undefined,
            read: Vec::new(),
        }
    }
}

impl<V: JsArg + Clone> Members for Args<'_, V> {
    type Error = ArgError;
    fn string(&mut self, name: &'static str) -> Result<String, ArgError> {
        let value = self.take();
        value
            .as_string()
            .ok_or_else(|| self.bad(name, "a string", value))
    }
    fn optional_string(&mut self, name: &'static str) -> Result<Option<String>, ArgError> {
        let value = self.take();
        if value.is_null() {
            return Ok(None);
        }
        value
            .as_string()
            .map(Some)
            .ok_or_else(|| self.bad(name, "a string or null (null: no result)", value))
    }
    fn number(&mut self, name: &'static str) -> Result<f64, ArgError> {
        let value = self.take();
        value
            .as_f64()
            .ok_or_else(|| self.bad(name, "a number", value))
    }
    fn fence(&mut self, _name: &'static str) -> Result<Fence, ArgError> {
        let value = self.take();
        safe_integer(value).ok_or_else(|| self.bad("fence", FENCE_WANTED, value))
    }
    fn maybe_string(&mut self, name: &'static str) -> Result<Option<String>, ArgError> {
        self.maybe(name, "a string, null or undefined", V::as_string)
    }
    fn maybe_number(&mut self, name: &'static str) -> Result<Option<f64>, ArgError> {
        self.maybe(name, "a number, null or undefined", V::as_f64)
    }
    fn maybe_integer(&mut self, name: &'static str) -> Result<Option<i64>, ArgError> {
        self.maybe(name, INTEGER_WANTED, safe_integer)
    }
    fn maybe_bool(&mut self, name: &'static str) -> Result<Option<bool>, ArgError> {
        self.maybe(name, "a boolean, null or undefined", V::as_bool)
    }
}

impl<'a, V: JsArg + Clone> Source for Args<'a, V> {
    type Item = Member<'a, V>;
    fn count(&mut self, name: &'static str) -> Result<usize, ArgError> {
        let value = self.take();
        match value.as_f64() {
            // Past u32 the count is out of range anyway; the range check names the bound.
            Some(n) if n.fract() == 0.0 && n >= 0.0 => Ok(n.min(u32::MAX as f64) as usize),
            _ => Err(self.bad(name, "a whole number", value)),
        }
    }
    fn objects<T>(
        &mut self,
        name: &'static str,
        mut read: impl FnMut(&mut Member<'a, V>) -> Result<T, ArgError>,
    ) -> Result<Vec<T>, ArgError> {
        let value = self.take();
        if !value.is_array() {
            return Err(self.bad(name, "an array of objects", value));
        }
        value
            .items()
            .into_iter()
            .enumerate()
            .map(|(index, object)| {
                if !object.is_object() || object.is_array() {
                    let place = format!("{name}[{index}]");
                    return Err(bad_value(self.op, &place, "an object", &object));
                }
                let mut member = self.object_member(name, Some(index), object);
                let item = read(&mut member)?;
                member.refuse_others()?;
                Ok(item)
            })
            .collect()
    }
    fn strings(&mut self, name: &'static str) -> Result<Vec<String>, ArgError> {
        let value = self.take();
        self.strings_of(value, name)
    }
    fn maybe_strings(&mut self, name: &'static str) -> Result<Option<Vec<String>>, ArgError> {
        let value = self.take();
        if value.is_undefined() || value.is_null() {
            return Ok(None);
        }
        self.strings_of(value, name).map(Some)
    }
    fn maybe_statements(
        &mut self,
        _name: &'static str,
    ) -> Result<Option<Vec<crate::Statement>>, ArgError> {
        let value = self.take();
        if value.is_undefined() || value.is_null() {
            return Ok(None);
        }
        statements::statements_of(self.op, value).map(Some)
    }
    fn fenced_writes(&mut self) -> Result<FencedArgs, ArgError> {
        let (statements, options) = (self.take(), self.take());
        statements::fenced_args(self.op, statements, options)
    }
    fn options<T>(
        &mut self,
        // Errors keep saying `options` (the name callers and tests know), for a worker's too.
        _name: &'static str,
        read: impl FnOnce(&mut Member<'a, V>) -> Result<T, ArgError>,
    ) -> Result<T, ArgError> {
        // JavaScript's options are one object argument; left out or null, it has no members.
        let value = self.take();
        if !(value.is_undefined() || value.is_null() || value.is_object() && !value.is_array()) {
            return Err(self.bad("options", "an object, null or undefined", value));
        }
        let mut member = self.object_member("options", None, value.clone());
        let options = read(&mut member)?;
        member.refuse_others()?;
        Ok(options)
    }
}

/// One object of a list argument (`enqueueMany`'s jobs, `renewMany`'s leases) or an options
/// object: its members read by their JavaScript names (`run_at` is `runAt`); a member the
/// operation does not take is refused, so a misspelt option never goes unnoticed.
pub(crate) struct Member<'a, V> {
    op: &'a str,
    list: &'static str,
    /// The item's index in its list; `None` for a lone options object.
    index: Option<usize>,
    /// The object (or undefined/null for options left out: no members).
    object: V,
    undefined: &'a V,
    read: Vec<String>,
}

impl<V: JsArg + Clone> Member<'_, V> {
    /// The object, for messages: `jobs[2]`, or `options`.
    fn whole(&self) -> String {
        match self.index {
            Some(index) => format!("{}[{index}]", self.list),
            None => self.list.to_string(),
        }
    }

    /// The member `name` (a protocol name) by its JavaScript name, and where it is, for messages.
    fn get(&mut self, name: &str) -> (V, String) {
        let js_name = crate::protocol::js_name(name);
        let value = if self.object.is_object() {
            self.object.member(&js_name)
        } else {
            self.undefined.clone()
        };
        let place = format!("{}.{js_name}", self.whole());
        self.read.push(js_name);
        (value, place)
    }

    fn refuse_others(&self) -> Result<(), ArgError> {
        if !self.object.is_object() {
            return Ok(());
        }
        for key in self.object.keys() {
            if !self.read.contains(&key) {
                return Err(ArgError(format!(
                    "{}(): {} has the member `{key}`; it takes only {}",
                    self.op,
                    self.whole(),
                    self.read.join(", ")
                )));
            }
        }
        Ok(())
    }

    fn wanted<T>(
        &mut self,
        name: &str,
        want: &str,
        convert: impl Fn(&V) -> Option<T>,
    ) -> Result<T, ArgError> {
        let (value, place) = self.get(name);
        convert(&value).ok_or_else(|| bad_value(self.op, &place, want, &value))
    }

    fn maybe<T>(
        &mut self,
        name: &str,
        want: &str,
        convert: impl Fn(&V) -> Option<T>,
    ) -> Result<Option<T>, ArgError> {
        let (value, place) = self.get(name);
        if value.is_undefined() || value.is_null() {
            return Ok(None);
        }
        convert(&value)
            .map(Some)
            .ok_or_else(|| bad_value(self.op, &place, want, &value))
    }
}

impl<V: JsArg + Clone> Members for Member<'_, V> {
    type Error = ArgError;
    fn string(&mut self, name: &'static str) -> Result<String, ArgError> {
        self.wanted(name, "a string", V::as_string)
    }
    fn optional_string(&mut self, name: &'static str) -> Result<Option<String>, ArgError> {
        let (value, place) = self.get(name);
        if value.is_null() {
            return Ok(None);
        }
        value
            .as_string()
            .map(Some)
            .ok_or_else(|| bad_value(self.op, &place, "a string or null", &value))
    }
    fn number(&mut self, name: &'static str) -> Result<f64, ArgError> {
        self.wanted(name, "a number", V::as_f64)
    }
    fn maybe_string(&mut self, name: &'static str) -> Result<Option<String>, ArgError> {
        self.maybe(name, "a string, null or undefined", V::as_string)
    }
    fn maybe_number(&mut self, name: &'static str) -> Result<Option<f64>, ArgError> {
        self.maybe(name, "a number, null or undefined", V::as_f64)
    }
    fn fence(&mut self, name: &'static str) -> Result<Fence, ArgError> {
        self.wanted(name, FENCE_WANTED, safe_integer)
    }
    fn maybe_integer(&mut self, name: &'static str) -> Result<Option<i64>, ArgError> {
        self.maybe(name, INTEGER_WANTED, safe_integer)
    }
    fn maybe_bool(&mut self, name: &'static str) -> Result<Option<bool>, ArgError> {
        self.maybe(name, "a boolean, null or undefined", V::as_bool)
    }
}
