//! A small JSON reader for protocol requests.
//!
//! Why not serde_json: callers such as Python's `json.dumps` write `NaN`, `Infinity` and
//! `-Infinity` for non-finite floats, and the contract wants those reported as
//! `invalid_argument`, not as unreadable lines. This reader accepts exactly JSON plus those three
//! tokens, keeps integers exact (fences are i64), and bounds nesting so no input can exhaust the
//! stack.
//!
//! Why not a JSON library that accepts those tokens: it would make the wasm the page downloads
//! larger, turn an integer past i64 into a parse error (an out-of-range fence must be
//! `invalid_argument`, not `bad_request`), and reword every "not valid JSON" message the batch
//! protocol's users see. The measurement behind this: `docs/decisions/protocol-json-reader.md`.
//!
//! This reader is about 300 lines, fuzzed (fuzz/) against serde_json as the oracle.

/// A parsed JSON value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Json>),
    /// Members in input order; a repeated key is kept, and lookups take the last one.
    Object(Vec<(String, Json)>),
}

/// A JSON number: its float value, and its exact integer value when written as an integer that
/// fits in i64.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Number {
    pub float: f64,
    pub int: Option<i64>,
    /// Written without fraction or exponent (even if too large for i64).
    pub integral_lexeme: bool,
}

const MAX_DEPTH: usize = 64;

impl Json {
    /// The value of member `key` (the last one, like JavaScript and Python).
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// A short name of the value's type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

/// Parses one complete JSON text (surrounding whitespace allowed).
pub(crate) fn parse(text: &str) -> Result<Json, String> {
    let mut reader = Reader {
        bytes: text.as_bytes(),
        pos: 0,
    };
    reader.skip_ws();
    let value = reader.value(0)?;
    reader.skip_ws();
    if reader.pos != reader.bytes.len() {
        return Err(format!(
            "unexpected text after the JSON value at byte {}",
            reader.pos
        ));
    }
    Ok(value)
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn error<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("{what} at byte {}", self.pos))
    }

    fn eat_word(&mut self, word: &str) -> bool {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json, String> {
        if depth > MAX_DEPTH {
            return self.error("JSON nested deeper than 64 levels");
        }
        match self.peek() {
            None => self.error("unexpected end of input"),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Json::String(self.string()?)),
            Some(b'-' | b'0'..=b'9' | b'N' | b'I') => self.number(),
            Some(b't') if self.eat_word("true") => Ok(Json::Bool(true)),
            Some(b'f') if self.eat_word("false") => Ok(Json::Bool(false)),
            Some(b'n') if self.eat_word("null") => Ok(Json::Null),
            Some(_) => self.error("unexpected character"),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json, String> {
        self.pos += 1;
        let mut members = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Json::Object(members));
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return self.error("expected a string key");
            }
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return self.error("expected ':'");
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.value(depth + 1)?;
            members.push((key, value));
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Json::Object(members));
                }
                _ => return self.error("expected ',' or '}'"),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Json, String> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Json::Array(items));
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Json::Array(items));
                }
                _ => return self.error("expected ',' or ']'"),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self
            .bytes
            .get(self.pos..self.pos + 4)
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| {
                u32::from_str_radix(d, 16)
                    .ok()
                    .filter(|_| d.bytes().all(|b| b.is_ascii_hexdigit()))
            });
        match digits {
            Some(value) => {
                self.pos += 4;
                Ok(value)
            }
            None => self.error("bad \\u escape"),
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.pos += 1; // opening quote
        let mut out = String::new();
        loop {
            let start = self.pos;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // The input is a &str and we stopped at ASCII bytes, so this slice is valid UTF-8.
            out.push_str(
                std::str::from_utf8(&self.bytes[start..self.pos]).map_err(|e| e.to_string())?,
            );
            match self.peek() {
                None => return self.error("unterminated string"),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let escape = self.peek();
                    self.pos += 1;
                    match escape {
                        Some(b'"') => out.push('"'),
                        Some(b'\\') => out.push('\\'),
                        Some(b'/') => out.push('/'),
                        Some(b'b') => out.push('\u{8}'),
                        Some(b'f') => out.push('\u{c}'),
                        Some(b'n') => out.push('\n'),
                        Some(b'r') => out.push('\r'),
                        Some(b't') => out.push('\t'),
                        Some(b'u') => {
                            let first = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&first) {
                                if !self.eat_word("\\u") {
                                    return self.error("lone high surrogate in \\u escape");
                                }
                                let second = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&second) {
                                    return self.error("invalid low surrogate in \\u escape");
                                }
                                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                            } else {
                                first
                            };
                            match char::from_u32(code) {
                                Some(c) => out.push(c),
                                None => return self.error("lone surrogate in \\u escape"),
                            }
                        }
                        _ => {
                            self.pos -= 1;
                            return self.error("bad escape in string");
                        }
                    }
                }
                Some(_) => return self.error("control character in string"),
            }
        }
    }

    fn number(&mut self) -> Result<Json, String> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        if self.eat_word("Infinity") {
            let float = if negative {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            };
            return Ok(Json::Number(Number {
                float,
                int: None,
                integral_lexeme: false,
            }));
        }
        if !negative && self.eat_word("NaN") {
            return Ok(Json::Number(Number {
                float: f64::NAN,
                int: None,
                integral_lexeme: false,
            }));
        }
        let digits = |r: &mut Self| {
            let from = r.pos;
            while let Some(b'0'..=b'9') = r.peek() {
                r.pos += 1;
            }
            r.pos - from
        };
        let int_start = self.pos;
        let int_digits = digits(self);
        if int_digits == 0 {
            return self.error("expected a number");
        }
        if int_digits > 1 && self.bytes[int_start] == b'0' {
            return self.error("leading zero in number");
        }
        let mut integral_lexeme = true;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            integral_lexeme = false;
            if digits(self) == 0 {
                return self.error("expected digits after '.'");
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            integral_lexeme = false;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return self.error("expected digits in exponent");
            }
        }
        let lexeme =
            std::str::from_utf8(&self.bytes[start..self.pos]).map_err(|e| e.to_string())?;
        // Rust's parser rounds correctly and gives ±inf for out-of-range values, like Python.
        let float: f64 = lexeme.parse().map_err(|_| format!("bad number {lexeme}"))?;
        let int = if integral_lexeme {
            lexeme.parse::<i64>().ok()
        } else {
            None
        };
        Ok(Json::Number(Number {
            float,
            int,
            integral_lexeme,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_json_and_the_three_python_tokens() {
        let v = parse(r#"{"a": [1, -2.5e3, NaN, Infinity, -Infinity], "b": "x\u00e9\ud83d\ude00", "c": null}"#).unwrap();
        let Json::Array(items) = v.get("a").unwrap() else {
            panic!()
        };
        assert_eq!(
            items[0],
            Json::Number(Number {
                float: 1.0,
                int: Some(1),
                integral_lexeme: true
            })
        );
        assert!(matches!(items[2], Json::Number(n) if n.float.is_nan()));
        assert!(matches!(items[4], Json::Number(n) if n.float == f64::NEG_INFINITY));
        assert_eq!(v.get("b"), Some(&Json::String("xé😀".into())));
    }

    #[test]
    fn keeps_big_integers_exact_and_flags_overflow() {
        let Json::Number(n) = parse("9223372036854775807").unwrap() else {
            panic!()
        };
        assert_eq!(n.int, Some(i64::MAX));
        let Json::Number(n) = parse("9223372036854775808").unwrap() else {
            panic!()
        };
        assert_eq!((n.int, n.integral_lexeme), (None, true));
        let Json::Number(n) = parse("1e400").unwrap() else {
            panic!()
        };
        assert!(n.float.is_infinite());
    }

    #[test]
    fn rejects_malformed_text() {
        for bad in [
            "",
            "{",
            "{\"a\":}",
            "[1,]",
            "01",
            "1.",
            "\"\\x\"",
            "\"\\ud800\"",
            "tru",
            "{} {}",
            "\"a\u{1}\"",
            "-NaN",
            "{'a':1}",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be rejected");
        }
        let deep = "[".repeat(100) + &"]".repeat(100);
        assert!(parse(&deep).unwrap_err().contains("deeper"));
    }
}
