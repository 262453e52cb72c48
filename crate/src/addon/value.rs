//! Node-API values as the shared argument readers (`crate::js`) see them.

use std::ffi::CString;
use std::ptr;

use napi::bindgen_prelude::{Array, BigInt, FromNapiValue, Object, Unknown};
use napi::{sys, JsValue as _, ValueType};

/// One JavaScript value of the call being read, on the JavaScript thread (napi values live as
/// long as the call's handle scope: never kept past it, never sent to another thread).
#[derive(Clone, Copy)]
pub(crate) struct Arg {
    env: sys::napi_env,
    value: sys::napi_value,
}

impl Arg {
    pub(crate) fn of(value: &Unknown<'_>) -> Arg {
        let raw = value.value();
        Arg {
            env: raw.env,
            value: raw.value,
        }
    }

    /// `undefined`, what a missing argument or member reads as.
    pub(crate) fn undefined(env: sys::napi_env) -> Arg {
        let mut value = ptr::null_mut();
        // SAFETY: a live env of the current call; napi_get_undefined only writes `value`.
        unsafe { sys::napi_get_undefined(env, &mut value) };
        Arg { env, value }
    }

    fn unknown(&self) -> Unknown<'_> {
        // SAFETY: env and value come from a live call of this thread.
        unsafe { Unknown::from_raw_unchecked(self.env, self.value) }
    }

    fn kind(&self) -> ValueType {
        self.unknown().get_type().unwrap_or(ValueType::Unknown)
    }

    /// The value as `T`, when it is of `kind`.
    fn read<T: FromNapiValue>(&self, kind: ValueType) -> Option<T> {
        if self.kind() != kind {
            return None;
        }
        // SAFETY: the value's type was checked just above.
        unsafe { T::from_napi_value(self.env, self.value) }.ok()
    }
}

impl crate::js::JsArg for Arg {
    fn is_undefined(&self) -> bool {
        self.kind() == ValueType::Undefined
    }
    fn is_null(&self) -> bool {
        self.kind() == ValueType::Null
    }
    fn as_string(&self) -> Option<String> {
        self.read(ValueType::String)
    }
    fn as_f64(&self) -> Option<f64> {
        self.read(ValueType::Number)
    }
    fn as_bool(&self) -> Option<bool> {
        self.read(ValueType::Boolean)
    }
    fn is_array(&self) -> bool {
        let mut is = false;
        // SAFETY: a live value; napi_is_array only writes `is`.
        unsafe { sys::napi_is_array(self.env, self.value, &mut is) };
        is
    }
    fn is_object(&self) -> bool {
        self.kind() == ValueType::Object
    }
    fn as_bigint(&self) -> Option<Result<i64, ()>> {
        let big: BigInt = self.read(ValueType::BigInt)?;
        let (n, lossless) = big.get_i64();
        Some(if lossless { Ok(n) } else { Err(()) })
    }
    fn items(&self) -> Vec<Arg> {
        if !self.is_array() {
            return Vec::new();
        }
        // SAFETY: an array, checked above.
        let Ok(array) = (unsafe { Array::from_napi_value(self.env, self.value) }) else {
            return Vec::new();
        };
        (0..array.len())
            .map(|i| {
                let mut item = ptr::null_mut();
                // SAFETY: a live array and an index below its length.
                let status = unsafe { sys::napi_get_element(self.env, self.value, i, &mut item) };
                if status == sys::Status::napi_ok {
                    Arg {
                        env: self.env,
                        value: item,
                    }
                } else {
                    Arg::undefined(self.env)
                }
            })
            .collect()
    }
    fn member(&self, name: &str) -> Arg {
        let Ok(key) = CString::new(name) else {
            return Arg::undefined(self.env);
        };
        let mut value = ptr::null_mut();
        // SAFETY: a live object (callers check is_object) and a NUL-terminated key.
        let status =
            unsafe { sys::napi_get_named_property(self.env, self.value, key.as_ptr(), &mut value) };
        if status == sys::Status::napi_ok {
            Arg {
                env: self.env,
                value,
            }
        } else {
            Arg::undefined(self.env)
        }
    }
    fn keys(&self) -> Vec<String> {
        // SAFETY: a live object (callers check is_object).
        let object = Object::from_raw(self.env, self.value);
        Object::keys(&object).unwrap_or_default()
    }
    fn type_of(&self) -> String {
        match self.kind() {
            ValueType::Undefined => "undefined",
            ValueType::Null => "object",
            ValueType::Boolean => "boolean",
            ValueType::Number => "number",
            ValueType::String => "string",
            ValueType::Symbol => "symbol",
            ValueType::Function => "function",
            ValueType::BigInt => "bigint",
            _ => "object",
        }
        .to_string()
    }
}
