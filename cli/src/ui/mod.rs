//! `leasefence ui`: a local dashboard over the store: a page, a JSON API under `/api/` and
//! Prometheus `/metrics`, all behind a random token (see docs/decisions/dashboard-server.md).

mod api;
mod auth;
mod metrics;
mod page;
mod sampler;
mod server;

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use crate::exit::{EXIT_INVALID, EXIT_STORAGE};

/// Options of `leasefence ui` (the subcommand's help is in commands.rs).
#[derive(clap::Args)]
pub struct UiArgs {
    /// Address and port to listen on; port 0 picks a free one (the URL printed names it).
    /// Beyond loopback only with an explicit --token.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8787")]
    listen: SocketAddr,
    /// The token every request must present (at least 32 characters); default: a random one.
    #[arg(long, env = "LEASEFENCE_UI_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Refuse every write (revive): a dashboard to look at only.
    #[arg(long)]
    read_only: bool,
    /// Seconds a client has to send a request's head (also how long a kept-alive connection may
    /// idle). Hidden: the tests shorten it.
    #[arg(long, hide = true, env = "LEASEFENCE_UI_HEADER_TIMEOUT", default_value = "10", value_parser = crate::clock::positive_seconds)]
    header_timeout: Duration,
    /// Seconds a client has to send a request's body.
    #[arg(long, hide = true, env = "LEASEFENCE_UI_BODY_TIMEOUT", default_value = "10", value_parser = crate::clock::positive_seconds)]
    body_timeout: Duration,
    /// Seconds a client has to take an answer.
    #[arg(long, hide = true, env = "LEASEFENCE_UI_WRITE_TIMEOUT", default_value = "30", value_parser = crate::clock::positive_seconds)]
    write_timeout: Duration,
    /// Connections served at once.
    #[arg(long, hide = true, env = "LEASEFENCE_UI_MAX_CONNECTIONS", default_value = "64", value_parser = clap::value_parser!(u16).range(1..))]
    max_connections: u16,
}

impl UiArgs {
    /// Whether the dashboard refuses every write (so it must find a database, never make one).
    pub(crate) fn read_only(&self) -> bool {
        self.read_only
    }
}

/// Runs the dashboard until the process is stopped; answers an exit status when it cannot start.
pub(crate) fn run(db: &Path, options: &leasefence::OpenOptions, args: UiArgs) -> i32 {
    let loopback = args.listen.ip().is_loopback();
    let token = match args.token {
        Some(token) => match auth::weak_token(&token) {
            Some(reason) => {
                eprintln!("leasefence ui: {reason}");
                return EXIT_INVALID;
            }
            None => token,
        },
        None if !loopback => {
            eprintln!(
                "leasefence ui: refusing to listen on {} (beyond loopback) with a random token: \
                 anyone who can reach it could try; pass --token TOKEN (or LEASEFENCE_UI_TOKEN) \
                 to do this on purpose, or listen on 127.0.0.1",
                args.listen
            );
            return EXIT_INVALID;
        }
        None => match auth::random_token() {
            Ok(token) => token,
            Err(err) => {
                eprintln!("leasefence ui: cannot read a random token from /dev/urandom: {err}");
                return EXIT_STORAGE;
            }
        },
    };
    let open = || {
        leasefence::open_with(db, options).map_err(|err| {
            // A label, not the raw --db: a PostgreSQL URL may hold a password.
            let target = leasefence::target_label(db);
            eprintln!("leasefence ui: cannot open {target}: {err}");
            crate::exit::exit_status_of(err.error_code())
        })
    };
    let store = match open() {
        Ok(store) => store,
        Err(status) => return status,
    };
    // The counts get a handle of their own, used by their own thread (sampler.rs).
    let counting = match open() {
        Ok(store) => store,
        Err(status) => return status,
    };
    let listener = match std::net::TcpListener::bind(args.listen) {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!(
                "leasefence ui: cannot listen on {}: {err}; pick another --listen port",
                args.listen
            );
            return EXIT_STORAGE;
        }
    };
    let address = listener.local_addr().unwrap_or(args.listen);
    if !loopback {
        eprintln!(
            "leasefence ui: listening beyond loopback on {address}, with the token you gave; \
             the traffic is plain HTTP"
        );
    }
    println!("http://{address}/?token={token}");
    let _ = std::io::stdout().flush();
    let config = server::Config {
        token,
        cookie: auth::cookie_name(address.port()),
        read_only: args.read_only,
        counts: sampler::Sampler::start(counting),
        limits: server::Limits {
            header: args.header_timeout,
            body: args.body_timeout,
            write: args.write_timeout,
            connections: usize::from(args.max_connections),
        },
    };
    if let Err(err) = server::serve(listener, &*store, config) {
        eprintln!("leasefence ui: the server stopped: {err}");
        return EXIT_STORAGE;
    }
    crate::exit::EXIT_OK
}
