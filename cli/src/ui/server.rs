//! The HTTP server: `tiny_http` parses the requests; this file routes them, checks the token
//! (every request) and the origin (every POST), and answers.

use std::io::{Read as _, Write as _};

use leasefence::Leases;
use tiny_http::{HTTPVersion, Header, Method, Request, Response};

use super::{api, auth, metrics, page};

/// The largest request body read (a revive is a few bytes).
const MAX_BODY: u64 = 64 * 1024;

/// What every request is checked against.
pub(crate) struct Config {
    pub(crate) token: String,
    pub(crate) read_only: bool,
    /// The counts, taken by their own thread.
    pub(crate) counts: std::sync::Arc<super::sampler::Sampler>,
}

/// Serves requests one after the other, on this thread and the store's one connection, until the
/// process is stopped. A single thread suits a local dashboard and keeps the SQLite store (not
/// `Sync`) on the thread that opened it.
pub(crate) fn serve(server: &tiny_http::Server, store: &dyn Leases, config: &Config) {
    for mut request in server.incoming_requests() {
        let response = handle(&mut request, store, config);
        let head_only = *request.method() == Method::Head;
        // One request a connection, by answering as HTTP/1.0 (which does not keep the connection
        // open). tiny_http serves each open connection on a thread of its pool, and its pool can
        // leave a connection accepted in a burst queued until another connection closes: a
        // browser loading the page's modules on six kept-alive connections at once left the
        // seventh unread and the page's load stalled. Closed connections give their threads back.
        let mut writer = request.into_writer();
        // A client gone before the answer is its own business.
        let _ = response
            .raw_print(&mut writer, HTTPVersion(1, 0), &[], head_only, None)
            .and_then(|()| writer.flush());
    }
}

type Reply = Response<std::io::Cursor<Vec<u8>>>;

fn with_header(response: Reply, name: &str, value: &str) -> Reply {
    match Header::from_bytes(name.as_bytes(), value.as_bytes()) {
        Ok(header) => response.with_header(header),
        Err(()) => response,
    }
}

fn reply(status: u16, content_type: &str, body: String) -> Reply {
    let response = Response::from_string(body).with_status_code(status);
    let response = with_header(response, "Content-Type", content_type);
    let response = with_header(response, "Cache-Control", "no-store");
    let response = with_header(response, "X-Content-Type-Options", "nosniff");
    let response = with_header(response, "Referrer-Policy", "no-referrer");
    with_header(response, "X-Frame-Options", "DENY")
}

fn json_reply((status, body): api::Answer) -> Reply {
    reply(status, "application/json", body.to_string())
}

/// `%XX` decoded (and `+` as a space in a query); invalid escapes are kept as they are.
fn percent_decode(text: &str, plus_is_space: bool) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (
            bytes[i],
            bytes.get(i + 1).and_then(|b| hex(*b)),
            bytes.get(i + 2).and_then(|b| hex(*b)),
        ) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                i += 2;
            }
            (b'+', _, _) if plus_is_space => out.push(b' '),
            (b, _, _) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k, true), percent_decode(v, true))
        })
        .collect()
}

fn not_allowed(allow: &str) -> Reply {
    let answer = api::error(
        405,
        "method_not_allowed",
        format!("use {allow} on this path"),
    );
    with_header(json_reply(answer), "Allow", allow)
}

fn handle(request: &mut Request, store: &dyn Leases, config: &Config) -> Reply {
    let url = request.url().to_string();
    let (path, query) = url.split_once('?').unwrap_or((&url, ""));
    let query = parse_query(query);
    if !auth::authorized(request, &query, &config.token) {
        return json_reply(api::error(
            401,
            "unauthorized",
            "this dashboard needs its token: open the URL `leasefence ui` printed \
             (…/?token=…), or send Authorization: Bearer TOKEN",
        ));
    }
    let now = crate::commands::wall_clock();
    let get = *request.method() == Method::Get;
    // The page's own files (its modules, its style).
    if let Some((content_type, body)) = page::asset(path) {
        return if get {
            reply(200, content_type, body.to_owned())
        } else {
            not_allowed("GET")
        };
    }
    match path {
        "/" if !get => not_allowed("GET"),
        "/" if query.iter().any(|(k, _)| k == "token") => {
            // Keep the token in a cookie and take it out of the address bar.
            let cookie = format!(
                "{}={}; HttpOnly; SameSite=Strict; Path=/",
                auth::COOKIE,
                config.token
            );
            let response = reply(303, "text/plain", "see /".into());
            // The language asked for (`?lang=ja`) stays in the address.
            let location = match query.iter().find(|(k, _)| k == "lang") {
                Some((_, lang)) if lang.chars().all(|c| c.is_ascii_alphabetic()) => {
                    format!("/?lang={lang}")
                }
                _ => "/".to_owned(),
            };
            with_header(
                with_header(response, "Set-Cookie", &cookie),
                "Location",
                &location,
            )
        }
        "/" => {
            let response = reply(
                200,
                "text/html; charset=utf-8",
                page::index(config.read_only),
            );
            // Scripts and styles only from this server's files: nothing inline runs.
            with_header(
                response,
                "Content-Security-Policy",
                "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'",
            )
        }
        // Browsers ask for it by themselves: nothing, rather than a 404 in the console.
        "/favicon.ico" => Response::from_data(Vec::new()).with_status_code(204),
        "/metrics" if !get => not_allowed("GET"),
        "/metrics" => match config.counts.current() {
            Ok(sample) => reply(
                200,
                "text/plain; version=0.0.4; charset=utf-8",
                metrics::render(&sample),
            ),
            Err(err) => reply(503, "text/plain", format!("leasefence: {err}\n")),
        },
        "/api/stats" if !get => not_allowed("GET"),
        "/api/stats" => json_reply(api::stats(&config.counts)),
        "/api/history" if !get => not_allowed("GET"),
        "/api/history" => json_reply(api::history(&config.counts)),
        "/api/schedules" if !get => not_allowed("GET"),
        "/api/schedules" => json_reply(api::schedules(store)),
        "/api/workers" if !get => not_allowed("GET"),
        "/api/workers" => json_reply(api::workers(store, now)),
        "/api/jobs" if !get => not_allowed("GET"),
        "/api/jobs" => json_reply(api::jobs(store, now, &query)),
        "/api/revive" if *request.method() != Method::Post => not_allowed("POST"),
        "/api/revive" => {
            if config.read_only {
                return json_reply(api::error(
                    403,
                    "read_only",
                    "this dashboard is read-only (--read-only): restart it without the flag to revive",
                ));
            }
            if let Err(message) = auth::same_origin(request) {
                return json_reply(api::error(403, "cross_origin", message));
            }
            let mut body = String::new();
            if request
                .as_reader()
                .take(MAX_BODY)
                .read_to_string(&mut body)
                .is_err()
            {
                return json_reply(api::error(400, "invalid", "the body must be UTF-8 JSON"));
            }
            let answer = api::revive(store, now, &body);
            config.counts.invalidate();
            json_reply(answer)
        }
        _ => match path.strip_prefix("/api/job/") {
            Some(_) if !get => not_allowed("GET"),
            Some(id) if !id.is_empty() => {
                json_reply(api::job(store, now, &percent_decode(id, false)))
            }
            _ => json_reply(api::error(
                404,
                "not_found",
                format!(
                    "no page {path}: see /api/stats, /api/history, /api/jobs, /api/job/ID, \
                     /api/workers, /api/schedules, /metrics"
                ),
            )),
        },
    }
}
