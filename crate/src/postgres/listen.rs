//! Waking idle workers on PostgreSQL (docs/contract.md section 11, waking;
//! docs/decisions/waking.md): a connection of the watch's own `LISTEN`s on the channels of the
//! worker's queues (`sql/channels.sql`: one per queue and schema, and one for every queue), and
//! a thread waits on it for notifications. Enqueue, enqueue_many and revive notify in their own
//! statement, so a notification is delivered when (and only if) the job committed.
//!
//! The thread blocks in the client's wait for notifications, with a timeout so that it sees the
//! watch dropped: it then ends and closes its connection within [`LOOK_EVERY`], without the
//! dropping thread waiting for it. A lost connection wakes the worker (notifications may have
//! been missed) and is opened again after a pause.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;
use postgres::Client;

use super::failure::pg;
use super::session::Link;
use crate::error::{Error, Result};
use crate::wake::{Wakeup, Watch};

/// How often the listening thread looks whether its watch was dropped.
const LOOK_EVERY: Duration = Duration::from_secs(2);

/// Ends the listening thread when dropped.
struct Running {
    dropped: Arc<AtomicBool>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::Release);
    }
}

/// Connects, listens on the channels of `queues` (`None`: every queue) and starts the thread
/// that calls `wakeup` on each batch of notifications.
pub(super) fn listen(link: Link, queues: Option<&[&str]>, wakeup: Wakeup) -> Result<Watch> {
    let names: Vec<String> = match queues {
        Some(queues) => queues.iter().map(|q| q.to_string()).collect(),
        None => vec![String::new()],
    };
    let client = subscribe(&link, &names)?;
    let dropped = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&dropped);
    std::thread::Builder::new()
        .name("leasefence-listen".into())
        .spawn(move || wait_loop(link, names, client, &seen, &*wakeup))
        .map_err(|err| Error::Internal {
            message: format!("cannot start the thread that listens for new jobs: {err}"),
        })?;
    Ok(Watch::new(Running { dropped }))
}

/// A connection listening on the channels of `queues` ('' for every queue).
fn subscribe(link: &Link, queues: &[String]) -> Result<Client> {
    let mut client = link.connect("listen")?;
    let channels: Vec<String> = client
        .query(include_str!("sql/channels.sql"), &[&queues])
        .map_err(pg("listen"))?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<std::result::Result<_, _>>()
        .map_err(pg("listen"))?;
    for channel in channels {
        // LISTEN takes an identifier, which cannot be bound: the name is ours, 'leasefence_'
        // and 32 hex digits (channels.sql), checked here before it is spliced in.
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
    Ok(client)
}

fn wait_loop(
    link: Link,
    queues: Vec<String>,
    mut client: Client,
    dropped: &AtomicBool,
    wakeup: &dyn Fn(),
) {
    while !dropped.load(Ordering::Acquire) {
        let got = client.notifications().timeout_iter(LOOK_EVERY).next();
        match got {
            Ok(Some(_)) => {
                // One wake-up for everything that arrived together.
                while let Ok(Some(_)) = client.notifications().iter().next() {}
                wakeup();
            }
            Ok(None) if !client.is_closed() => {}
            _ => {
                // Lost: the worker looks for itself, and the connection is made again.
                wakeup();
                loop {
                    std::thread::sleep(LOOK_EVERY);
                    if dropped.load(Ordering::Acquire) {
                        return;
                    }
                    if let Ok(again) = subscribe(&link, &queues) {
                        client = again;
                        wakeup();
                        break;
                    }
                }
            }
        }
    }
}
