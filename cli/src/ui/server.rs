//! The HTTP server: hyper (HTTP/1.1) on a one-thread tokio runtime parses the requests and
//! serves every connection concurrently, each under time limits; this file routes them, checks
//! the token (every request) and the origin (every POST), and answers. The store stays on the
//! thread that opened it and serves the requests' reads one after the other (`StoreThread`), so
//! no client, however slow, holds it (docs/decisions/dashboard-server.md).

use std::convert::Infallible;
use std::future::Future as _;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};
use hyper::body::{Body as _, Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use leasefence::Leases;

use super::{api, auth, metrics, page};

/// The largest request body accepted (a revive is a few bytes); a longer one is refused (413)
/// from its announced length, before any of it is read, or when the stream passes it.
const MAX_BODY: u64 = 16 * 1024;
/// The most a connection buffers of a request's head (hyper's default is about 400 KB).
const MAX_HEAD: usize = 64 * 1024;

/// The time limits and the connection cap.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// For a request's head to arrive, counted from when the connection waits for one: also how
    /// long a kept-alive connection may sit idle.
    pub(crate) header: Duration,
    /// For a request's body to arrive, once its head has.
    pub(crate) body: Duration,
    /// For an answer to be taken by the client, from its first byte written to its last.
    pub(crate) write: Duration,
    /// Connections served at once; more wait in the listener's backlog.
    pub(crate) connections: usize,
}

/// What every request is checked against.
pub(crate) struct Config {
    /// The token every request must present.
    pub(crate) token: String,
    /// The cookie's name, this dashboard's own (auth::cookie_name).
    pub(crate) cookie: String,
    /// `--read-only`: every write refused.
    pub(crate) read_only: bool,
    /// The counts, taken by their own thread.
    pub(crate) counts: Arc<super::sampler::Sampler>,
    /// The time limits and the connection cap.
    pub(crate) limits: Limits,
}

/// A read or write of the store, run on the store's thread.
type StoreJob = Box<dyn FnOnce(&dyn Leases) + Send>;

/// The way to the store's thread.
#[derive(Clone)]
struct StoreThread(std::sync::mpsc::Sender<StoreJob>);

impl StoreThread {
    /// Runs `work` on the store's thread and answers its result; `None` if that thread is gone
    /// or `work` panicked.
    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&dyn Leases) -> T + Send + 'static,
    ) -> Option<T> {
        let (tell, told) = tokio::sync::oneshot::channel();
        let job: StoreJob = Box::new(move |store| {
            // The client may be gone by now: its answer is then dropped.
            let _ = tell.send(work(store));
        });
        self.0.send(job).ok()?;
        told.await.ok()
    }
}

/// Serves until the process is stopped: the HTTP side on a thread of its own, the store on this
/// one. Answers an error only when the HTTP side cannot start or stops.
pub(crate) fn serve(
    listener: std::net::TcpListener,
    store: &dyn Leases,
    config: Config,
) -> io::Result<()> {
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()?;
    let (send, jobs) = std::sync::mpsc::channel::<StoreJob>();
    let http = std::thread::Builder::new()
        .name("leasefence-ui-http".into())
        .spawn(move || runtime.block_on(accept(listener, Arc::new(config), StoreThread(send))))?;
    // The store's requests, one after the other; the channel closes when the HTTP side ends.
    for job in jobs {
        // A panic in one answer fails that request (its sender is dropped: 500), not the server.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(store)));
    }
    match http.join() {
        Ok(result) => result,
        Err(_) => Err(io::Error::other("the HTTP thread panicked")),
    }
}

/// Accepts connections while fewer than `connections` are open, each served on a task of its own.
async fn accept(
    listener: std::net::TcpListener,
    config: Arc<Config>,
    store: StoreThread,
) -> io::Result<()> {
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let slots = Arc::new(tokio::sync::Semaphore::new(config.limits.connections));
    loop {
        // Taken before accepting: past the cap, connections wait in the kernel's backlog.
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return Ok(());
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of descriptors and the like: try again shortly rather than spin.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Nagle off: an answer's last segment would otherwise wait for the client's delayed
        // acknowledgement (40 ms on Linux: a page of 50 jobs took 45 ms where 1 ms is its work).
        let _ = stream.set_nodelay(true);
        let (config, store) = (Arc::clone(&config), store.clone());
        tokio::spawn(async move {
            connection(stream, config, store).await;
            drop(slot);
        });
    }
}

/// One connection, kept alive between requests while its client sends them in time.
async fn connection(stream: tokio::net::TcpStream, config: Arc<Config>, store: StoreThread) {
    let limits = config.limits;
    let io = WriteDeadline::new(TokioIo::new(stream), limits.write);
    let service = hyper::service::service_fn(move |request| {
        let (config, store) = (Arc::clone(&config), store.clone());
        async move { Ok::<_, Infallible>(answer(request, &config, &store).await) }
    });
    // An error here is the client's (gone, too slow, malformed): the connection just ends.
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header)
        .max_buf_size(MAX_HEAD)
        // `Set-Cookie`, not `set-cookie`, for scripts that read the answer as text.
        .title_case_headers(true)
        .serve_connection(io, service)
        .await;
}

/// A connection whose every answer must be taken by the client within `limit` of its first byte
/// written: a client that reads slowly or not at all is closed then, its answer dropped.
struct WriteDeadline<T> {
    io: T,
    limit: Duration,
    deadline: Pin<Box<tokio::time::Sleep>>,
    /// An answer is being written: from its first write to the flush after its last.
    writing: bool,
}

impl<T> WriteDeadline<T> {
    fn new(io: T, limit: Duration) -> Self {
        WriteDeadline {
            io,
            limit,
            deadline: Box::pin(tokio::time::sleep(limit)),
            writing: false,
        }
    }

    /// `write` on the connection, or an error once the deadline has passed.
    fn within<R>(
        &mut self,
        cx: &mut Context<'_>,
        write: impl FnOnce(&mut T, &mut Context<'_>) -> Poll<io::Result<R>>,
    ) -> Poll<io::Result<R>> {
        if !self.writing {
            self.writing = true;
            let at = tokio::time::Instant::now() + self.limit;
            self.deadline.as_mut().reset(at);
        }
        let late = || {
            Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client did not take the answer in time",
            )))
        };
        if self.deadline.is_elapsed() {
            return late();
        }
        match write(&mut self.io, cx) {
            // Waiting for the client to read: wake up at the deadline too.
            Poll::Pending if self.deadline.as_mut().poll(cx).is_ready() => late(),
            other => other,
        }
    }
}

impl<T: hyper::rt::Read + Unpin> hyper::rt::Read for WriteDeadline<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<T: hyper::rt::Write + Unpin> hyper::rt::Write for WriteDeadline<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .within(cx, |io, cx| Pin::new(io).poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .within(cx, |io, cx| Pin::new(io).poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let flushed = Pin::new(&mut this.io).poll_flush(cx);
        if matches!(flushed, Poll::Ready(Ok(()))) {
            // hyper flushes once an answer's bytes are all written: the next write starts anew.
            this.writing = false;
        }
        flushed
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.within(cx, |io, cx| Pin::new(io).poll_shutdown(cx))
    }
}

type Reply = Response<Full<Bytes>>;

fn reply(status: u16, content_type: &'static str, body: impl Into<Bytes>) -> Reply {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

fn json_reply((status, body): api::Answer) -> Reply {
    reply(status, "application/json", body.to_string())
}

/// An error answer after which the connection is closed (its request was not read through).
fn closing(status: u16, code: &str, message: impl Into<String>) -> Reply {
    let mut response = json_reply(api::error(status, code, message));
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

fn too_large() -> Reply {
    closing(
        413,
        "too_large",
        format!("a request body may have {MAX_BODY} bytes at most (a revive is {{\"job\": ID}})"),
    )
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

fn not_allowed(allow: &'static str) -> Reply {
    let answer = api::error(
        405,
        "method_not_allowed",
        format!("use {allow} on this path"),
    );
    let mut response = json_reply(answer);
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

/// The answer when the store's thread could not give one.
fn store_gone() -> Reply {
    json_reply(api::error(
        500,
        "internal",
        "the dashboard's store thread failed this request; see the server's output",
    ))
}

/// `work` on the store's thread, as JSON.
async fn on_store(
    store: &StoreThread,
    work: impl FnOnce(&dyn Leases) -> api::Answer + Send + 'static,
) -> Reply {
    store.run(work).await.map_or_else(store_gone, json_reply)
}

/// `work` (which may wait for the counting thread) on tokio's blocking pool.
async fn blocking(work: impl FnOnce() -> Reply + Send + 'static) -> Reply {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|_| store_gone())
}

/// The request's body as text, read within the body limit and deadline.
async fn read_body(body: Incoming, limits: &Limits) -> Result<String, Reply> {
    let read = Limited::new(body, MAX_BODY as usize).collect();
    match tokio::time::timeout(limits.body, read).await {
        Err(_) => Err(closing(
            408,
            "timeout",
            format!(
                "the request body did not arrive within {} s",
                limits.body.as_secs_f64()
            ),
        )),
        Ok(Err(err)) if err.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
        Ok(Err(_)) => Err(closing(400, "invalid", "the request body was cut off")),
        Ok(Ok(collected)) => String::from_utf8(collected.to_bytes().to_vec())
            .map_err(|_| json_reply(api::error(400, "invalid", "the body must be UTF-8 JSON"))),
    }
}

async fn answer(request: Request<Incoming>, config: &Config, store: &StoreThread) -> Reply {
    // Refused from its announced length, before anything is read or allocated for it.
    if request.body().size_hint().lower() > MAX_BODY {
        return too_large();
    }
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_owned();
    let query = parse_query(parts.uri.query().unwrap_or(""));
    if !auth::authorized(&parts.headers, &query, &config.token, &config.cookie) {
        return json_reply(api::error(
            401,
            "unauthorized",
            "this dashboard needs its token: open the URL `leasefence ui` printed \
             (…/?token=…), or send Authorization: Bearer TOKEN",
        ));
    }
    let now = crate::clock::wall_clock();
    // HEAD is GET without the body (hyper leaves it out).
    let get = parts.method == Method::GET || parts.method == Method::HEAD;
    // The page's own files (its modules, its style).
    if let Some((content_type, body)) = page::asset(&path) {
        return if get {
            reply(200, content_type, body)
        } else {
            not_allowed("GET")
        };
    }
    match path.as_str() {
        "/" if !get => not_allowed("GET"),
        "/" if query.iter().any(|(k, _)| k == "token") => {
            // Keep the token in this dashboard's cookie (replacing any left by an earlier run)
            // and take it out of the address bar.
            let cookie = format!(
                "{}={}; HttpOnly; SameSite=Strict; Path=/",
                config.cookie, config.token
            );
            // The language asked for (`?lang=ja`) stays in the address.
            let location = match query.iter().find(|(k, _)| k == "lang") {
                Some((_, lang)) if lang.chars().all(|c| c.is_ascii_alphabetic()) => {
                    format!("/?lang={lang}")
                }
                _ => "/".to_owned(),
            };
            let mut response = reply(303, "text/plain", "see /");
            let headers = response.headers_mut();
            // Both are printable ASCII (the token is checked at start, `lang` just above).
            if let Ok(value) = HeaderValue::from_str(&cookie) {
                headers.insert(header::SET_COOKIE, value);
            }
            if let Ok(value) = HeaderValue::from_str(&location) {
                headers.insert(header::LOCATION, value);
            }
            response
        }
        "/" => {
            let mut response = reply(
                200,
                "text/html; charset=utf-8",
                page::index(config.read_only),
            );
            // Scripts and styles only from this server's files: nothing inline runs.
            response.headers_mut().insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(
                    "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'",
                ),
            );
            response
        }
        // Browsers ask for it by themselves: nothing, rather than a 404 in the console.
        "/favicon.ico" => {
            let mut response = Response::new(Full::new(Bytes::new()));
            *response.status_mut() = StatusCode::NO_CONTENT;
            response
        }
        "/metrics" if !get => not_allowed("GET"),
        "/metrics" => {
            let counts = Arc::clone(&config.counts);
            blocking(move || match counts.current() {
                Ok(sample) => reply(
                    200,
                    "text/plain; version=0.0.4; charset=utf-8",
                    metrics::render(&sample),
                ),
                Err(err) => reply(503, "text/plain", format!("leasefence: {err}\n")),
            })
            .await
        }
        "/api/stats" if !get => not_allowed("GET"),
        "/api/stats" => {
            let counts = Arc::clone(&config.counts);
            blocking(move || json_reply(api::stats(&counts))).await
        }
        "/api/history" if !get => not_allowed("GET"),
        "/api/history" => {
            let counts = Arc::clone(&config.counts);
            blocking(move || json_reply(api::history(&counts))).await
        }
        "/api/schedules" if !get => not_allowed("GET"),
        "/api/schedules" => on_store(store, api::schedules).await,
        "/api/workers" if !get => not_allowed("GET"),
        "/api/workers" => on_store(store, move |s| api::workers(s, now)).await,
        "/api/jobs" if !get => not_allowed("GET"),
        "/api/jobs" => on_store(store, move |s| api::jobs(s, now, &query)).await,
        "/api/revive" if parts.method != Method::POST => not_allowed("POST"),
        "/api/revive" => {
            if config.read_only {
                return json_reply(api::error(
                    403,
                    "read_only",
                    "this dashboard is read-only (--read-only): restart it without the flag to revive",
                ));
            }
            if let Err(message) = auth::same_origin(&parts.headers) {
                return json_reply(api::error(403, "cross_origin", message));
            }
            let text = match read_body(body, &config.limits).await {
                Ok(text) => text,
                Err(refused) => return refused,
            };
            let counts = Arc::clone(&config.counts);
            on_store(store, move |s| {
                let answer = api::revive(s, now, &text);
                counts.invalidate();
                answer
            })
            .await
        }
        _ => match path.strip_prefix("/api/job/") {
            Some(_) if !get => not_allowed("GET"),
            Some(id) if !id.is_empty() => {
                let id = percent_decode(id, false);
                on_store(store, move |s| api::job(s, now, &id)).await
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
