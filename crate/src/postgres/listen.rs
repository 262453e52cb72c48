//! Waking idle workers on PostgreSQL (docs/contract.md section 11, waking;
//! docs/decisions/waking.md): a connection of the watch's own `LISTEN`s on the channels of the
//! worker's queues (`sql/channels.sql`: one per queue and schema, and one for every queue), and
//! a thread waits on it for notifications. Enqueue, enqueue_many and revive notify in their own
//! statement, so a notification is delivered when (and only if) the job committed.
//!
//! The thread blocks in the client's wait for notifications. Dropping the watch wakes it at once
//! with a notification on a channel of the watch's own (`leasefence_stop_` and a name the server
//! made unique), sent from a short-lived connection by a thread of its own, so the dropping
//! thread does not wait: the listener then ends and closes its connection. Should that
//! notification not arrive (the server unreachable), the wait's timeout, [`LOOK_EVERY`], ends
//! it. Idle, the thread never wakes on its own more often than that. A lost connection wakes
//! the worker (notifications may have been missed) and is opened again after a pause.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;
use postgres::Client;

use super::failure::pg;
use super::session::Link;
use crate::error::{Error, Result};
use crate::wake::{Wakeup, Watch};

/// How long the listening thread waits before it looks whether its watch was dropped, when the
/// stop notification did not come.
const LOOK_EVERY: Duration = Duration::from_secs(30);

/// The pause before a lost connection is made again.
const RECONNECT_AFTER: Duration = Duration::from_secs(2);

/// Ends the listening thread when dropped.
struct Running {
    dropped: Arc<AtomicBool>,
    /// Where the stop notification is sent from (a link of its own, never connected before).
    link: Link,
    stop_channel: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::Release);
        let link = self.link.unconnected_twin();
        let channel = std::mem::take(&mut self.stop_channel);
        // Best effort: when it fails, the listener ends at its next look instead.
        let _ = std::thread::Builder::new()
            .name("leasefence-unlisten".into())
            .spawn(move || {
                if let Ok(mut client) = link.connect("unlisten") {
                    let _ = client.execute("SELECT pg_notify($1, '')", &[&channel]);
                }
            });
    }
}

/// Connects, listens on the channels of `queues` (`None`: every queue) and starts the thread
/// that calls `wakeup` on each batch of notifications.
pub(super) fn listen(link: Link, queues: Option<&[&str]>, wakeup: Wakeup) -> Result<Watch> {
    let names: Vec<String> = match queues {
        Some(queues) => queues.iter().map(|q| q.to_string()).collect(),
        None => vec![String::new()],
    };
    let mut client = link.connect("listen")?;
    // Unique among the server's connections at the time: its backend's pid and the clock.
    let stop_channel: String = client
        .query_one(
            "SELECT 'leasefence_stop_' || md5(pg_backend_pid()::text || ':' || clock_timestamp()::text)",
            &[],
        )
        .and_then(|row| row.try_get(0))
        .map_err(pg("listen"))?;
    subscribe(&mut client, &names, &stop_channel)?;
    let dropped = Arc::new(AtomicBool::new(false));
    let running = Running {
        dropped: Arc::clone(&dropped),
        link: link.unconnected_twin(),
        stop_channel: stop_channel.clone(),
    };
    std::thread::Builder::new()
        .name("leasefence-listen".into())
        .spawn(move || {
            let listener = Listener {
                link,
                queues: names,
                stop_channel,
                dropped,
            };
            listener.wait_loop(client, &*wakeup)
        })
        .map_err(|err| Error::Internal {
            message: format!("cannot start the thread that listens for new jobs: {err}"),
        })?;
    Ok(Watch::new(running))
}

/// Listens on the watch's stop channel first, then on the channels of `queues` ('' for every
/// queue).
fn subscribe(client: &mut Client, queues: &[String], stop_channel: &str) -> Result<()> {
    let channels: Vec<String> = client
        .query(include_str!("sql/channels.sql"), &[&queues])
        .map_err(pg("listen"))?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<std::result::Result<_, _>>()
        .map_err(pg("listen"))?;
    for channel in std::iter::once(stop_channel).chain(channels.iter().map(String::as_str)) {
        // LISTEN takes an identifier, which cannot be bound: the names are ours, 'leasefence_'
        // and hex digits (channels.sql, the stop channel above), checked before being spliced in.
        if !channel
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err(Error::Internal {
                message: format!("the server made the channel name {channel:?}, not 'leasefence_' and hex digits"),
            });
        }
        client
            .batch_execute(&format!("LISTEN {channel}"))
            .map_err(pg("listen"))?;
    }
    Ok(())
}

/// The listening thread's state.
struct Listener {
    link: Link,
    queues: Vec<String>,
    stop_channel: String,
    dropped: Arc<AtomicBool>,
}

impl Listener {
    fn wait_loop(&self, mut client: Client, wakeup: &dyn Fn()) {
        while !self.dropped.load(Ordering::Acquire) {
            let got = client.notifications().timeout_iter(LOOK_EVERY).next();
            match got {
                Ok(Some(first)) => {
                    // One wake-up for everything that arrived together; none for the stop.
                    let mut work = first.channel() != self.stop_channel;
                    while let Ok(Some(more)) = client.notifications().iter().next() {
                        work |= more.channel() != self.stop_channel;
                    }
                    if work && !self.dropped.load(Ordering::Acquire) {
                        wakeup();
                    }
                }
                Ok(None) if !client.is_closed() => {}
                _ => {
                    // Lost: the worker looks for itself, and the connection is made again.
                    wakeup();
                    match self.reconnect() {
                        Some(again) => {
                            client = again;
                            wakeup();
                        }
                        None => return,
                    }
                }
            }
        }
    }

    /// Connects and listens again, after a pause each try, until it works or the watch is
    /// dropped (`None`).
    fn reconnect(&self) -> Option<Client> {
        loop {
            std::thread::sleep(RECONNECT_AFTER);
            if self.dropped.load(Ordering::Acquire) {
                return None;
            }
            if let Ok(mut client) = self.link.connect("listen") {
                if subscribe(&mut client, &self.queues, &self.stop_channel).is_ok() {
                    return Some(client);
                }
            }
        }
    }
}
