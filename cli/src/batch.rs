//! `batch`: the JSON-lines protocol on standard input and output.

use std::io::{BufRead, Read, Write};

use leasefence::protocol::{respond, Response, TargetBackend};

use crate::exit::{EXIT_OK, EXIT_STORAGE};

/// The longest request line `batch` reads; longer lines get `bad_request`.
const MAX_LINE_BYTES: u64 = 64 << 20;

/// docs/contract.md section 4: one response line per request line, flushed at once; never stops
/// on a bad line. Ends at end of input (exit 0) or when stdout is closed.
pub(crate) fn batch(backend: &mut TargetBackend) -> i32 {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut input)
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut line);
        let response = match read {
            Ok(0) => return EXIT_OK,
            Err(err) => {
                eprintln!("leasefence batch: cannot read standard input: {err}");
                return EXIT_STORAGE;
            }
            Ok(_) if line.last() != Some(&b'\n') && line.len() as u64 > MAX_LINE_BYTES => {
                if let Err(err) = skip_rest_of_line(&mut input) {
                    eprintln!("leasefence batch: cannot read standard input: {err}");
                    return EXIT_STORAGE;
                }
                Response::Failed {
                    code: "bad_request",
                    message: format!(
                        "the line is longer than {MAX_LINE_BYTES} bytes; send smaller requests"
                    ),
                }
            }
            Ok(_) => {
                let text = line.strip_suffix(b"\n").unwrap_or(&line);
                let text = text.strip_suffix(b"\r").unwrap_or(text);
                match std::str::from_utf8(text) {
                    Ok(text) => respond(backend, text),
                    Err(err) => Response::Failed {
                        code: "bad_request",
                        message: format!("the line is not valid UTF-8 ({err}), so not JSON"),
                    },
                }
            }
        };
        let written = writeln!(out, "{}", response.to_json()).and_then(|()| out.flush());
        if written.is_err() {
            // The reader went away; nobody is left to answer.
            return EXIT_OK;
        }
    }
}

fn skip_rest_of_line(input: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                input.consume(i + 1);
                return Ok(());
            }
            None => {
                let n = buf.len();
                input.consume(n);
            }
        }
    }
}
