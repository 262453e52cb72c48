//! [`AsyncLeases`]: the calls the protocol runs ([`crate::protocol`]), as futures, so that one
//! dispatch serves every store: a [`Leases`] (SQLite, natively PostgreSQL) answers at once, and
//! a store whose client waits on the network without blocking (PostgreSQL from Node, through
//! `pg`) answers when its statements have. The calls and their replies are [`Leases::execute`]'s.

use crate::call::{Call, Reply};
use crate::error::Result;
use crate::leases::Leases;

/// The contract's calls on some store, as futures. See [`Call`] for each one's contract.
#[allow(async_fn_in_trait)] // Crate-internal: its futures are awaited where they are made.
pub(crate) trait AsyncLeases {
    /// Runs one call, as [`Leases::execute`] does.
    async fn execute(&self, call: Call<'_>) -> Result<Reply>;
}

/// Every synchronous store: the future is ready when first polled.
impl AsyncLeases for dyn Leases + '_ {
    async fn execute(&self, call: Call<'_>) -> Result<Reply> {
        Leases::execute(self, call)
    }
}

/// Drives `future` to its end where every step is ready at once (a synchronous store, a
/// synchronous client): one poll. A future that would wait cannot be served here; it answers an
/// error instead of blocking.
pub(crate) fn ready<T>(future: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    use std::task::{Context, Poll, Waker};
    let mut future = std::pin::pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(value) => value,
        Poll::Pending => Err(crate::Error::Internal {
            message: "a step of a synchronous store did not finish at once".into(),
        }),
    }
}
