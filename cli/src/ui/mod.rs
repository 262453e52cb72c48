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

use crate::{EXIT_INVALID, EXIT_STORAGE};

/// Options of `leasefence ui` (the subcommand's help is in commands.rs).
#[derive(clap::Args)]
pub struct UiArgs {
    /// Address and port to listen on; port 0 picks a free one (the URL printed names it).
    /// Beyond loopback only with an explicit --token.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8787")]
    listen: SocketAddr,
    /// The token every request must present (at least 16 characters); default: a random one.
    #[arg(long, env = "LEASEFENCE_UI_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Refuse every write (revive): a dashboard to look at only.
    #[arg(long)]
    read_only: bool,
}

/// Runs the dashboard until the process is stopped; answers an exit status when it cannot start.
pub(crate) fn run(db: &Path, options: &leasefence::OpenOptions, args: UiArgs) -> i32 {
    let loopback = args.listen.ip().is_loopback();
    let token = match args.token {
        Some(token) if token.len() < 16 || token.chars().any(|c| !c.is_ascii_graphic()) => {
            eprintln!(
                "leasefence ui: --token must be at least 16 printable characters without spaces"
            );
            return EXIT_INVALID;
        }
        Some(token) => token,
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
            eprintln!("leasefence ui: cannot open {}: {err}", db.display());
            if err.code() == "storage" {
                EXIT_STORAGE
            } else {
                EXIT_INVALID
            }
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
    let server = match listen(args.listen) {
        Ok(server) => server,
        Err(err) => {
            eprintln!(
                "leasefence ui: cannot listen on {}: {err}; pick another --listen port",
                args.listen
            );
            return EXIT_STORAGE;
        }
    };
    let address = server.server_addr().to_ip().unwrap_or(args.listen);
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
        read_only: args.read_only,
        counts: sampler::Sampler::start(counting),
    };
    server::serve(&server, &*store, &config);
    crate::EXIT_OK
}

/// The server on a listener with Nagle's algorithm off. tiny_http writes a response through a
/// 1 KB buffer, so any answer longer than that leaves in several segments; with Nagle on, the
/// last one waits for the client's delayed acknowledgement (40 ms on Linux), which made every
/// page of 50 jobs take 45 ms where 1 ms is its work. Linux hands the option on to each accepted
/// connection.
fn listen(
    address: SocketAddr,
) -> Result<tiny_http::Server, Box<dyn std::error::Error + Send + Sync + 'static>> {
    let listener = std::net::TcpListener::bind(address)?;
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd as _;
        let on: libc::c_int = 1;
        // SAFETY: a valid socket descriptor, a pointer to a c_int and its size.
        let set = unsafe {
            libc::setsockopt(
                listener.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_NODELAY,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if set != 0 {
            return Err(Box::new(std::io::Error::last_os_error()));
        }
    }
    tiny_http::Server::from_listener(listener, None)
}
