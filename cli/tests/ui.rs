//! `leasefence ui` as a real process over real HTTP: the token on every request, same-origin
//! POSTs, `--read-only`, the paged JSON API, and `/metrics` parsed by Prometheus' own Python
//! parser (`prometheus_client`, installed with pip when missing). The PostgreSQL variant is
//! `#[ignore]`d: `bash scripts/postgres.sh cargo test -p leasefence-cli --test ui -- --ignored`.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use leasefence::{Leases, NewJob};
use serde_json::Value;

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// A connection whose reads and writes give up after 10 s (a test fails rather than hangs).
fn connect(host: &str) -> TcpStream {
    let stream = TcpStream::connect(host).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    stream
        .set_write_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    stream
}

/// Reads until the server closes the connection: the status, the head (status line and headers)
/// and the body. An error if the connection stays silent for the stream's read timeout.
fn read_answer(stream: &mut TcpStream) -> std::io::Result<(u16, String, Vec<u8>)> {
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| {
            std::io::Error::other(format!(
                "no complete answer: {:?}",
                String::from_utf8_lossy(&answer)
            ))
        })?;
    let head = String::from_utf8_lossy(&answer[..split + 2]).into_owned();
    let status = head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    Ok((status, head, answer[split + 4..].to_vec()))
}

/// A database file of this test's own, removed at the end.
struct Db(std::path::PathBuf);

impl Db {
    fn new(test: &str) -> Db {
        let path = std::env::temp_dir().join(format!("lf-ui-{test}-{}.db", std::process::id()));
        Db::remove(&path);
        Db(path)
    }
    fn remove(path: &std::path::Path) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
    fn target(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        Db::remove(&self.0);
    }
}

/// A running `leasefence ui`, stopped when dropped.
struct Ui {
    child: Child,
    host: String,
    token: String,
}

impl Ui {
    fn start(db: &str, extra: &[&str]) -> Ui {
        Ui::start_on(db, "127.0.0.1:0", extra, &[])
    }

    /// `leasefence ui` listening on `listen`, with `env` set (the hidden time limits).
    fn start_on(db: &str, listen: &str, extra: &[&str], env: &[(&str, &str)]) -> Ui {
        let mut child = Command::new(env!("CARGO_BIN_EXE_leasefence"))
            .args(["--db", db, "ui", "--listen", listen])
            .args(extra)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start leasefence ui");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        if line.is_empty() {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            panic!("leasefence ui printed no URL; stderr: {err}");
        }
        let rest = line
            .trim()
            .strip_prefix("http://")
            .expect("the URL starts with http://");
        let (host, token) = rest.split_once("/?token=").expect("the URL has ?token=");
        assert!(
            host.starts_with("127.0.0.1:") && !host.ends_with(":0"),
            "{line}"
        );
        Ui {
            host: host.into(),
            token: token.into(),
            child,
        }
    }

    /// Sends `method path` with `headers` and `body`, answers the status and the body.
    fn raw(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        let mut stream = TcpStream::connect(&self.host).unwrap();
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.host,
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let status = answer[9..12].parse().unwrap();
        let body = answer
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        (status, body)
    }

    /// The port-named cookie of this dashboard (a host's cookies go to all of its ports).
    fn cookie_name(&self) -> String {
        let port = self.host.rsplit(':').next().unwrap();
        format!("leasefence_token_{port}")
    }

    /// Opens `/?token=TOKEN` sending `cookie` (if any), as a browser opening the printed URL
    /// would: the answer must be the 303 that sets the cookie; answers its `name=value`.
    fn open_url(&self, token: &str, cookie: Option<&str>) -> String {
        let mut stream = connect(&self.host);
        let cookie = cookie.map_or(String::new(), |c| format!("Cookie: {c}\r\n"));
        write!(
            stream,
            "GET /?token={token} HTTP/1.1\r\nHost: {}\r\n{cookie}Connection: close\r\n\r\n",
            self.host
        )
        .unwrap();
        let (status, head, body) = read_answer(&mut stream).unwrap();
        assert_eq!(status, 303, "{head}{}", String::from_utf8_lossy(&body));
        let set = head
            .lines()
            .find_map(|l| l.strip_prefix("Set-Cookie: "))
            .unwrap_or_else(|| panic!("no cookie set: {head}"));
        set.split(';').next().unwrap().to_string()
    }

    fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }

    fn origin(&self) -> String {
        format!("http://{}", self.host)
    }

    /// `GET path` with the right token; the JSON answer.
    fn get_json(&self, path: &str) -> (u16, Value) {
        let (status, body) = self.raw("GET", path, &[("Authorization", &self.bearer())], "");
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }

    /// `POST /api/revive` of `job` with the right token and origin.
    fn revive(&self, job: &str) -> (u16, String) {
        let body = serde_json::json!({"job": job}).to_string();
        let (auth, origin) = (self.bearer(), self.origin());
        let headers = [
            ("Authorization", auth.as_str()),
            ("Origin", origin.as_str()),
        ];
        self.raw("POST", "/api/revive", &headers, &body)
    }
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Enqueues `job` on `queue`, claims it and fails it for good: a dead job.
fn dead_job(store: &dyn Leases, job: &str, queue: &str) {
    let t = now();
    assert!(store
        .enqueue_job(&NewJob::new(job).queue(queue).payload("p-1"))
        .unwrap());
    let lease = store
        .claim(job, "w", t, 60.0)
        .unwrap()
        .lease(job, "w")
        .unwrap();
    assert!(store
        .fail(&lease, t, None, Some("boom"))
        .unwrap()
        .is_granted());
}

fn is_dead(store: &dyn Leases, job: &str) -> bool {
    store.inspect(job).unwrap().unwrap().dead
}

#[test]
fn every_request_needs_the_token() {
    let db = Db::new("token");
    let store = leasefence::open(&db.0).unwrap();
    dead_job(&*store, "d", "mail");
    let ui = Ui::start(&db.target(), &[]);
    let origin = ui.origin();
    let wrong = format!("{}x", &ui.token[..ui.token.len() - 1]);
    let wrong = if wrong == ui.token {
        "0".repeat(48)
    } else {
        wrong
    };
    for path in [
        "/",
        "/api/stats",
        "/api/jobs",
        "/api/job/d",
        "/metrics",
        "/nowhere",
    ] {
        assert_eq!(ui.raw("GET", path, &[], "").0, 401, "no token: {path}");
        let with_query = format!("{path}?token={wrong}");
        assert_eq!(
            ui.raw("GET", &with_query, &[], "").0,
            401,
            "wrong ?token: {path}"
        );
        let bearer = format!("Bearer {wrong}");
        let headers = [("Authorization", bearer.as_str())];
        assert_eq!(
            ui.raw("GET", path, &headers, "").0,
            401,
            "wrong bearer: {path}"
        );
        let cookie = format!("{}={wrong}", ui.cookie_name());
        let headers = [("Cookie", cookie.as_str())];
        assert_eq!(
            ui.raw("GET", path, &headers, "").0,
            401,
            "wrong cookie: {path}"
        );
    }
    // A right token beside a wrong one is refused too.
    let both = format!("/api/stats?token={}&token={wrong}", ui.token);
    assert_eq!(ui.raw("GET", &both, &[], "").0, 401);
    // Revive without a token, or with a wrong one: refused, and the job stays dead.
    let body = r#"{"job":"d"}"#;
    let (status, text) = ui.raw("POST", "/api/revive", &[("Origin", &origin)], body);
    assert_eq!(status, 401, "{text}");
    assert!(
        text.contains("token"),
        "the error says what is missing: {text}"
    );
    let bearer = format!("Bearer {wrong}");
    let headers = [
        ("Origin", origin.as_str()),
        ("Authorization", bearer.as_str()),
    ];
    assert_eq!(ui.raw("POST", "/api/revive", &headers, body).0, 401);
    assert!(is_dead(&*store, "d"));

    // The right token, each way it can come.
    assert_eq!(ui.get_json("/api/stats").0, 200);
    let query = format!("/metrics?token={}", ui.token);
    assert_eq!(ui.raw("GET", &query, &[], "").0, 200);
    // Loading the page with ?token= sets the cookie (and drops the token from the address).
    let mut stream = TcpStream::connect(&ui.host).unwrap();
    write!(
        stream,
        "GET /?token={} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        ui.token, ui.host
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 303"), "{answer}");
    let cookie = answer
        .lines()
        .find_map(|l| l.strip_prefix("Set-Cookie: "))
        .expect("a cookie");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap();
    let (status, page) = ui.raw("GET", "/", &[("Cookie", pair)], "");
    assert_eq!(status, 200);
    assert!(
        page.contains("/dashboard/main.js"),
        "the page loads its controller"
    );
    let (status, main) = ui.raw("GET", "/dashboard/main.js", &[("Cookie", pair)], "");
    assert_eq!(status, 200);
    assert!(main.contains("/api/stats"), "the page uses the API");
    // The page's files need the token too.
    assert_eq!(ui.raw("GET", "/dashboard/main.js", &[], "").0, 401);
    assert_eq!(ui.raw("GET", "/api/stats", &[("Cookie", pair)], "").0, 200);
}

#[test]
fn a_cross_origin_post_is_refused() {
    let db = Db::new("origin");
    let store = leasefence::open(&db.0).unwrap();
    dead_job(&*store, "d", "default");
    let ui = Ui::start(&db.target(), &[]);
    let auth = ui.bearer();
    let body = r#"{"job":"d"}"#;
    let refused: [&[(&str, &str)]; 4] = [
        &[("Origin", "http://evil.example")],
        &[("Origin", "null")],
        // A browser's cross-site request, even naming our origin.
        &[("Origin", &ui.origin()), ("Sec-Fetch-Site", "cross-site")],
        // Neither header: refused too (scripts send Origin).
        &[],
    ];
    for extra in refused {
        let mut headers = vec![("Authorization", auth.as_str())];
        headers.extend_from_slice(extra);
        let (status, text) = ui.raw("POST", "/api/revive", &headers, body);
        assert_eq!(status, 403, "{extra:?}: {text}");
        assert!(text.contains("Origin"), "{text}");
        assert!(is_dead(&*store, "d"), "{extra:?} changed the job");
    }
    // A GET cannot revive.
    assert_eq!(ui.get_json("/api/revive").0, 405);
    assert!(is_dead(&*store, "d"));

    // Same origin (a browser's Sec-Fetch-Site alone, or Origin): revived, claimable again.
    let headers = [
        ("Authorization", auth.as_str()),
        ("Sec-Fetch-Site", "same-origin"),
    ];
    let (status, text) = ui.raw("POST", "/api/revive", &headers, body);
    assert_eq!(status, 200, "{text}");
    assert!(!is_dead(&*store, "d"));
    let claimed = store
        .claim_next("w2", now(), 30.0)
        .unwrap()
        .expect("claimable");
    assert_eq!((claimed.job.as_str(), claimed.fence), ("d", 2));
    // Reviving a job that is not dead, or none: a JSON error with its code.
    let (status, text) = ui.revive("d");
    assert_eq!(status, 409, "{text}");
    let (status, text) = ui.revive("nobody");
    assert_eq!(status, 404, "{text}");
    let headers = [("Authorization", auth.as_str()), ("Origin", &ui.origin())];
    let (status, text) = ui.raw("POST", "/api/revive", &headers, r#"{"job":7}"#);
    assert_eq!(status, 400, "{text}");
    let error: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(error["error"]["code"], "invalid");
}

#[test]
fn a_read_only_server_refuses_to_revive() {
    let db = Db::new("readonly");
    let store = leasefence::open(&db.0).unwrap();
    dead_job(&*store, "d", "default");
    let ui = Ui::start(&db.target(), &["--read-only"]);
    let (status, text) = ui.revive("d");
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("read-only"), "{text}");
    assert!(is_dead(&*store, "d"));
    let (status, page) = ui.raw("GET", "/", &[("Authorization", &ui.bearer())], "");
    assert_eq!(status, 200);
    assert!(page.contains(r#"<meta name="leasefence-read-only" content="true">"#));
    assert_eq!(ui.get_json("/api/job/d").1["state"], "dead");
}

/// Runs `leasefence ARGS`, which must exit within 10 s (a server that starts is killed and
/// fails the test); answers its status and stderr.
fn must_exit(args: &[&str]) -> (Option<i32>, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_leasefence"))
        .args(args)
        .env_remove("LEASEFENCE_UI_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{args:?} started a server instead of refusing: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn beyond_loopback_needs_an_explicit_token() {
    let db = Db::new("loopback");
    let (code, out, err) = must_exit(&["--db", &db.target(), "ui", "--listen", "0.0.0.0:0"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--token") && err.contains("loopback"), "{err}");
    assert!(out.is_empty(), "{out}");
    let (code, _, err) = must_exit(&["--db", &db.target(), "ui", "--token", "short"]);
    assert_eq!(code, Some(2), "{err}");
}

#[test]
fn the_api_pages_filters_and_reports() {
    let db = Db::new("paging");
    let store = leasefence::open(&db.0).unwrap();
    for i in 0..7 {
        store
            .enqueue_job(&NewJob::new(format!("j{i}")).queue(if i % 2 == 0 {
                "even"
            } else {
                "odd"
            }))
            .unwrap();
    }
    dead_job(&*store, "d/1 x", "odd");
    let ui = Ui::start(&db.target(), &[]);

    let mut seen = Vec::new();
    let mut path = "/api/jobs?limit=3".to_string();
    loop {
        let (status, page) = ui.get_json(&path);
        assert_eq!(status, 200, "{page}");
        let jobs = page["jobs"].as_array().unwrap();
        assert!(jobs.len() <= 3);
        seen.extend(jobs.iter().map(|j| j["id"].as_str().unwrap().to_string()));
        match page["next"].as_str() {
            Some(next) => {
                path = format!(
                    "/api/jobs?limit=3&after={}",
                    next.replace(' ', "%20").replace('/', "%2F")
                )
            }
            None => break,
        }
    }
    // Newest enqueued first, every job once across the pages.
    let all: Vec<String> = ["d/1 x".to_string()]
        .into_iter()
        .chain((0..7).rev().map(|i| format!("j{i}")))
        .collect();
    assert_eq!(seen, all);

    let (_, odd) = ui.get_json("/api/jobs?queue=odd");
    let ids: Vec<&str> = odd["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["d/1 x", "j5", "j3", "j1"]);
    let (_, dead) = ui.get_json("/api/jobs?state=dead");
    assert_eq!(dead["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(dead["jobs"][0]["failures"], 1);
    assert_eq!(dead["next"], Value::Null);

    for bad in [
        "limit=0",
        "limit=501",
        "limit=x",
        "state=lost",
        "after=nobody",
    ] {
        let (status, error) = ui.get_json(&format!("/api/jobs?{bad}"));
        assert_eq!(status, 400, "{bad}: {error}");
        assert!(
            error["error"]["message"].as_str().unwrap().len() > 10,
            "{error}"
        );
    }

    let (status, report) = ui.get_json("/api/job/d%2F1%20x");
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["state"], "dead");
    assert_eq!(report["job"]["payload"], "p-1");
    assert_eq!(report["job"]["queue"], "odd");
    assert_eq!(report["job"]["failures"][0]["error"], "boom");
    assert_eq!(report["job"]["failures"][0]["fence"], 1);
    assert_eq!(ui.get_json("/api/job/nobody").0, 404);

    let (status, stats) = ui.get_json("/api/stats");
    assert_eq!(status, 200);
    assert_eq!(stats["all"]["queued"], 7);
    assert_eq!(stats["all"]["dead"], 1);
    assert_eq!(stats["queues"]["even"]["queued"], 4);
    assert_eq!(stats["queues"]["odd"]["queued"], 3);
    assert_eq!(stats["queues"]["odd"]["dead"], 1);
    // The table's size (every state) and the fence floor (nothing pruned: 0).
    assert_eq!(stats["table"]["jobs"], 8);
    assert_eq!(stats["table"]["fence_floor"], 0);
}

/// The counts come from a thread of their own (sampler.rs): a revive through the dashboard is in
/// the next answer at once, a change by another process within a few refresh intervals, and
/// `/api/history` keeps one sample per interval for the chart.
#[test]
fn counts_follow_the_dashboards_writes_at_once_and_others_soon() {
    let db = Db::new("sampler");
    let store = leasefence::open(&db.0).unwrap();
    dead_job(&*store, "d", "default");
    let ui = Ui::start(&db.target(), &[]);
    let (_, stats) = ui.get_json("/api/stats");
    assert_eq!(
        (
            stats["all"]["dead"].as_u64(),
            stats["all"]["queued"].as_u64()
        ),
        (Some(1), Some(0))
    );
    assert_eq!(ui.revive("d").0, 200);
    // Within the refresh interval of the last count, yet the revive is seen.
    let (_, stats) = ui.get_json("/api/stats");
    assert_eq!(
        (
            stats["all"]["dead"].as_u64(),
            stats["all"]["queued"].as_u64()
        ),
        (Some(0), Some(1))
    );
    // Another process's enqueue shows once the interval (1 s here) has passed.
    store.enqueue("e").unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (_, stats) = ui.get_json("/api/stats");
        if stats["all"]["queued"] == 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the enqueue never showed: {stats}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let (status, history) = ui.get_json("/api/history");
    assert_eq!(status, 200);
    let samples = history["samples"].as_array().unwrap();
    assert!(samples.len() >= 3, "{history}");
    let times: Vec<f64> = samples.iter().map(|s| s["at"].as_f64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    assert_eq!(samples.first().unwrap()["dead"], 1);
    assert_eq!(samples.last().unwrap()["queued"], 2);
}

/// `text` parsed by `prometheus_client.parser`: every sample as `name{sorted labels} value`.
fn prometheus_samples(text: &str) -> Vec<String> {
    let script = "import sys\n\
        from prometheus_client.parser import text_string_to_metric_families\n\
        for family in text_string_to_metric_families(sys.stdin.read()):\n\
        \x20   assert family.type == 'gauge' or (family.type == 'counter' and all(\n\
        \x20       s.name == family.name + '_total' for s in family.samples)), family\n\
        \x20   for s in family.samples:\n\
        \x20       labels = ','.join(f'{k}={v}' for k, v in sorted(s.labels.items()))\n\
        \x20       print(f'{s.name}{{{labels}}} {int(s.value)}')\n";
    let have = Command::new("python3")
        .args(["-c", "import prometheus_client"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !have {
        let pip = |extra: &[&str]| {
            Command::new("python3")
                .args(["-m", "pip", "install", "--quiet", "prometheus_client"])
                .args(extra)
                .status()
                .map(|s| s.success())
                .unwrap_or(false)
        };
        assert!(
            pip(&[]) || pip(&["--break-system-packages"]),
            "cannot install prometheus_client with pip"
        );
    }
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "prometheus_client refused:\n{text}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn metrics_parse_with_prometheus_client_and_match_the_store() {
    let db = Db::new("metrics");
    let store = leasefence::open(&db.0).unwrap();
    let t = now();
    store.enqueue_job(&NewJob::new("a").queue("mail")).unwrap();
    store.enqueue_job(&NewJob::new("b").queue("mail")).unwrap();
    store
        .enqueue_job(&NewJob::new("c").queue("we\"ird"))
        .unwrap();
    store.enqueue_with("later", Some(t + 3600.0), None).unwrap();
    assert!(store.claim("b", "w", t, 3600.0).unwrap().is_granted());
    dead_job(&*store, "d", "mail");
    // The registry: one worker alive (beating with its lease) and one stopped, its host odd.
    let mut alive = leasefence::WorkerBeat::new("w", "h1", 10, t);
    alive.counters.claimed = 3;
    alive.counters.stale_writes_refused = 2;
    let lease = leasefence::Lease::new("b", "w", 1);
    assert!(store.heartbeat(&alive, &[lease], t, 3600.0).unwrap()[0].is_granted());
    let mut stopped = leasefence::WorkerBeat::new("v", "h\"2", 11, t - 5.0);
    stopped.stopping = true;
    stopped.counters.completed = 7;
    store.heartbeat(&stopped, &[], t - 1.0, 30.0).unwrap();
    // A job finished two hours ago and pruned: the floor becomes its fence, 2.
    store.enqueue("old").unwrap();
    assert!(store
        .claim("old", "w", t - 9000.0, 10.0)
        .unwrap()
        .is_granted());
    let old = store
        .claim("old", "w", t - 8000.0, 3600.0)
        .unwrap()
        .lease("old", "w")
        .unwrap();
    assert!(store.complete(&old, t - 7200.0, None).unwrap().is_granted());
    assert_eq!(
        store
            .prune(&leasefence::Prune::finished_before(t - 3600.0))
            .unwrap(),
        1
    );
    let ui = Ui::start(&db.target(), &[]);
    let (status, text) = ui.raw("GET", "/metrics", &[("Authorization", &ui.bearer())], "");
    assert_eq!(status, 200);
    let (ages, samples): (Vec<String>, Vec<String>) = prometheus_samples(&text)
        .into_iter()
        .partition(|s| s.starts_with("leasefence_oldest_waiting_job_age_seconds"));
    // The oldest waiting job's age: the queued jobs of `mail` and `we"ird` were enqueued moments
    // ago (the store's clock); `default` holds only a job due in an hour, so nothing waits there.
    let age = |queue: &str| -> u64 {
        let prefix = format!("leasefence_oldest_waiting_job_age_seconds{{queue={queue}}} ");
        let line = ages.iter().find(|s| s.starts_with(&prefix));
        line.unwrap_or_else(|| panic!("no age for {queue}: {ages:?}"))[prefix.len()..]
            .parse()
            .unwrap()
    };
    assert_eq!(ages.len(), 3, "{ages:?}");
    assert_eq!(age("default"), 0);
    assert!(age("mail") < 60 && age("we\"ird") < 60, "{ages:?}");
    let mut expected = Vec::new();
    for queue in ["default", "mail", "we\"ird"] {
        let c = store.stats_in(Some(queue), now()).unwrap();
        for (state, n) in [
            ("queued", c.queued),
            ("scheduled", c.scheduled),
            ("leased", c.leased),
            ("done", c.done),
            ("dead", c.dead),
        ] {
            expected.push(format!(
                "leasefence_jobs{{queue={queue},state={state}}} {n}"
            ));
        }
    }
    expected.push("leasefence_jobs_leased{} 1".into());
    expected.push("leasefence_jobs_dead{} 1".into());
    expected.push("leasefence_jobs_stored{} 5".into());
    expected.push("leasefence_fence_floor{} 2".into());
    expected.push("leasefence_workers{status=alive} 1".into());
    expected.push("leasefence_workers{status=gone} 1".into());
    for (name, w, v) in [
        ("claimed", 3, 0),
        ("completed", 0, 7),
        ("failed", 0, 0),
        ("dead", 0, 0),
        ("leases_lost", 0, 0),
        ("stale_writes_refused", 2, 0),
        ("renewals", 0, 0),
    ] {
        expected.push(format!(
            "leasefence_worker_{name}_total{{host=h1,worker=w}} {w}"
        ));
        expected.push(format!(
            "leasefence_worker_{name}_total{{host=h\"2,worker=v}} {v}"
        ));
    }
    assert_eq!(samples, expected, "{text}");
}

/// The same rules and answers on PostgreSQL (job ids of this run's own, so a shared database
/// does not matter).
#[test]
#[ignore = "needs PostgreSQL: bash scripts/postgres.sh cargo test -p leasefence-cli --test ui -- --ignored"]
fn postgres_dashboard_refuses_and_revives() {
    let url = match std::env::var("LEASEFENCE_PG_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => panic!("needs LEASEFENCE_PG_URL: run `bash scripts/postgres.sh cargo test -p leasefence-cli --test ui -- --ignored`"),
    };
    let store = leasefence::open(&url).unwrap();
    let job = format!("ui-dead-{}-{}", std::process::id(), now() as u64);
    let queue = format!("ui-{}", std::process::id());
    dead_job(&*store, &job, &queue);
    let ui = Ui::start(&url, &[]);
    assert_eq!(ui.raw("GET", "/api/stats", &[], "").0, 401);
    let body = serde_json::json!({"job": job}).to_string();
    let headers = [
        ("Authorization", ui.bearer()),
        ("Origin", "http://evil.example".into()),
    ];
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(ui.raw("POST", "/api/revive", &headers, &body).0, 403);
    assert!(is_dead(&*store, &job));
    let (status, report) = ui.get_json(&format!("/api/job/{job}"));
    assert_eq!((status, report["state"].as_str()), (200, Some("dead")));
    let (status, stats) = ui.get_json("/api/stats");
    assert_eq!(status, 200);
    assert_eq!(stats["queues"][&queue]["dead"], 1);
    let (status, page) = ui.get_json(&format!("/api/jobs?queue={queue}&state=dead"));
    assert_eq!(status, 200);
    assert_eq!(page["jobs"][0]["id"], job.as_str());
    let (status, text) = ui.raw("GET", "/metrics", &[("Authorization", &ui.bearer())], "");
    assert_eq!(status, 200);
    let line = format!("leasefence_jobs{{queue={queue},state=dead}} 1");
    assert!(prometheus_samples(&text).contains(&line), "{text}");
    let ro = Ui::start(&url, &["--read-only"]);
    assert_eq!(ro.revive(&job).0, 403);
    assert!(is_dead(&*store, &job));
    assert_eq!(ui.revive(&job).0, 200);
    assert!(!is_dead(&*store, &job));
    let lease = store.claim(&job, "w2", now(), 30.0).unwrap();
    assert!(lease.is_granted(), "{lease:?}");
}

/// Short time limits for the tests of slow clients (the defaults are 10 s, 10 s and 30 s).
const SHORT_LIMITS: [(&str, &str); 3] = [
    ("LEASEFENCE_UI_HEADER_TIMEOUT", "1"),
    ("LEASEFENCE_UI_BODY_TIMEOUT", "1"),
    ("LEASEFENCE_UI_WRITE_TIMEOUT", "2"),
];

/// `GET /metrics` with the token, timed: it must answer 200 within 3 s.
fn metrics_answer_promptly(ui: &Ui, while_what: &str) {
    let started = std::time::Instant::now();
    let mut stream = connect(&ui.host);
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nConnection: close\r\n\r\n",
        ui.host,
        ui.bearer()
    )
    .unwrap();
    let answer = read_answer(&mut stream);
    let took = started.elapsed();
    assert!(
        matches!(answer, Ok((200, _, _))) && took < std::time::Duration::from_secs(3),
        "/metrics while {while_what}: {answer:?} after {took:?}"
    );
}

/// A body announced far over the limit is refused (413) before any of it is read or allocated,
/// and the server goes on answering; a streamed (chunked) one is cut at the limit (413 too).
#[test]
fn a_huge_body_is_refused_unread_and_the_server_goes_on() {
    let db = Db::new("huge-body");
    let ui = Ui::start(&db.target(), &[]);
    // Without the token too: the length alone is refused (tiny_http allocated it and aborted).
    let mut stream = connect(&ui.host);
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {}\r\nContent-Length: 1000000000000\r\n\r\n",
        ui.host
    )
    .unwrap();
    let (status, head, _) = read_answer(&mut stream).expect("an answer, then the close");
    assert_eq!(status, 413, "{head}");
    assert_eq!(ui.get_json("/api/stats").0, 200, "the server still answers");
    let mut stream = connect(&ui.host);
    write!(
        stream,
        "POST /api/revive HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nOrigin: {}\r\n\
         Content-Length: 1000000000000\r\n\r\n",
        ui.host,
        ui.bearer(),
        ui.origin()
    )
    .unwrap();
    let (status, head, body) = read_answer(&mut stream).expect("an answer, then the close");
    assert_eq!(status, 413, "{head}{}", String::from_utf8_lossy(&body));
    assert_eq!(ui.get_json("/api/stats").0, 200, "the server still answers");

    let mut stream = connect(&ui.host);
    write!(
        stream,
        "POST /api/revive HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nOrigin: {}\r\n\
         Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{}\r\n",
        ui.host,
        ui.bearer(),
        ui.origin(),
        20_000,
        "x".repeat(20_000)
    )
    .unwrap();
    let (status, head, _) = read_answer(&mut stream).expect("an answer, then the close");
    assert_eq!(status, 413, "{head}");
    assert_eq!(ui.get_json("/api/stats").0, 200);
}

/// A client that sends part of a request's head, or a head and part of its body, and waits,
/// holds up no other client, and is closed once its time is up (1 s here).
#[test]
fn a_slow_sender_holds_up_nobody_and_is_closed() {
    let db = Db::new("slowloris");
    let ui = Ui::start_on(&db.target(), "127.0.0.1:0", &[], &SHORT_LIMITS);
    let started = std::time::Instant::now();
    let mut partial_head = connect(&ui.host);
    write!(
        partial_head,
        "GET /metrics HTTP/1.1\r\nHost: {}\r\n",
        ui.host
    )
    .unwrap();
    let mut partial_body = connect(&ui.host);
    write!(
        partial_body,
        "POST /api/revive HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nOrigin: {}\r\n\
         Content-Length: 4000\r\n\r\n{{\"job\":",
        ui.host,
        ui.bearer(),
        ui.origin()
    )
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    metrics_answer_promptly(&ui, "two clients send slowly");

    // The partial head: closed with no answer; the partial body: 408, closed.
    let closed = read_answer(&mut partial_head);
    let took = started.elapsed();
    assert!(
        closed
            .as_ref()
            .is_err_and(|e| e.to_string().contains("no complete answer")),
        "{closed:?}"
    );
    assert!(
        took < std::time::Duration::from_secs(4),
        "closed after {took:?}"
    );
    let (status, head, body) = read_answer(&mut partial_body).expect("a 408, then the close");
    assert_eq!(status, 408, "{head}{}", String::from_utf8_lossy(&body));
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
    metrics_answer_promptly(&ui, "after the slow clients");
}

/// A client that asks for a large answer (a 24 MB payload: more than the sockets' buffers hold)
/// and does not read it holds up no other client; once the write limit (2 s here) passes, its
/// connection is closed with the answer cut short.
#[test]
fn a_client_that_does_not_read_holds_up_nobody() {
    let db = Db::new("no-reader");
    // Past the default payload limit (1 MiB): a store opened without limits writes it; the
    // dashboard reads whatever is stored.
    let no_limits = leasefence::OpenOptions::new().limits(leasefence::Limits::none());
    let store = leasefence::open_with(&db.0, &no_limits).unwrap();
    let payload = "x".repeat(24 << 20);
    store
        .enqueue_job(&NewJob::new("big").payload(payload.as_str()))
        .unwrap();
    let ui = Ui::start_on(&db.target(), "127.0.0.1:0", &[], &SHORT_LIMITS);
    let mut idle = connect(&ui.host);
    write!(
        idle,
        "GET /api/job/big HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nConnection: close\r\n\r\n",
        ui.host,
        ui.bearer()
    )
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    metrics_answer_promptly(&ui, "a client does not read its answer");
    std::thread::sleep(std::time::Duration::from_secs(3));
    let (status, head, body) = read_answer(&mut idle).expect("the answer's start, then the close");
    assert_eq!(status, 200, "{head}");
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no length: {head}"));
    assert!(
        length > payload.len() && body.len() < length,
        "the answer was cut: {} of {length} bytes",
        body.len()
    );
    metrics_answer_promptly(&ui, "after the closed client");
}

/// A restarted dashboard (same port, new token) opens from its printed URL although the browser
/// still sends the old run's cookie: the URL's token wins and its answer replaces the cookie.
#[test]
fn a_restarted_dashboard_opens_despite_the_old_cookie() {
    let db = Db::new("restart");
    let first = Ui::start(&db.target(), &[]);
    let old_cookie = first.open_url(&first.token, None);
    let listen = first.host.clone();
    drop(first);
    let second = Ui::start_on(&db.target(), &listen, &[], &[]);
    assert_ne!(second.token, old_cookie.split('=').nth(1).unwrap());
    let new_cookie = second.open_url(&second.token, Some(&old_cookie));
    assert_eq!(
        new_cookie,
        format!("{}={}", second.cookie_name(), second.token)
    );
    assert_eq!(
        new_cookie.split('=').next(),
        old_cookie.split('=').next(),
        "the new cookie replaces the old one"
    );
    let (status, page) = second.raw("GET", "/", &[("Cookie", &new_cookie)], "");
    assert_eq!(status, 200);
    assert!(page.contains("/dashboard/main.js"), "{page}");
    // The old cookie alone is refused.
    assert_eq!(
        second.raw("GET", "/", &[("Cookie", &old_cookie)], "").0,
        401
    );
}

/// Two dashboards on one host: the browser sends both cookies to both ports, and each
/// dashboard finds its own (they are named after the port).
#[test]
fn two_dashboards_on_one_host_keep_their_own_cookies() {
    let (db_a, db_b) = (Db::new("two-a"), Db::new("two-b"));
    let a = Ui::start(&db_a.target(), &[]);
    let b = Ui::start(&db_b.target(), &[]);
    let (cookie_a, cookie_b) = (a.open_url(&a.token, None), b.open_url(&b.token, None));
    assert_ne!(
        cookie_a.split('=').next(),
        cookie_b.split('=').next(),
        "one cookie name for two dashboards"
    );
    let both = format!("{cookie_a}; {cookie_b}");
    for ui in [&a, &b] {
        let (status, text) = ui.raw("GET", "/api/stats", &[("Cookie", &both)], "");
        assert_eq!(status, 200, "{}: {text}", ui.host);
    }
}

/// HEAD answers as GET does, without the body.
#[test]
fn head_answers_as_get_without_a_body() {
    let db = Db::new("head");
    let ui = Ui::start(&db.target(), &[]);
    for path in ["/", "/metrics", "/api/stats", "/dashboard/main.js"] {
        let (status, body) = ui.raw("HEAD", path, &[("Authorization", &ui.bearer())], "");
        assert_eq!((status, body.as_str()), (200, ""), "HEAD {path}");
    }
    assert_eq!(ui.raw("HEAD", "/metrics", &[], "").0, 401);
}

/// A `--token` shorter than 32 characters is refused, saying so; one of 32 serves.
#[test]
fn a_weak_token_is_refused() {
    let db = Db::new("weak");
    let short = "t".repeat(31);
    let (code, out, err) = must_exit(&["--db", &db.target(), "ui", "--token", &short]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("too short (31 characters)") && err.contains("at least 32"),
        "{err}"
    );
    assert!(out.is_empty(), "{out}");
    let ui = Ui::start(&db.target(), &["--token", &"t".repeat(32)]);
    assert_eq!(ui.token, "t".repeat(32));
    assert_eq!(ui.get_json("/api/stats").0, 200);
}
