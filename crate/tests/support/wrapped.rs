//! A real `LeaseStore` behind a test's own `execute`: what is not an operation (`fenced_with`,
//! a closure) is forwarded here once, so a test that counts, slows or alters calls writes only
//! that.

use leasefence::{Call, FencedHandle, Finish, Lease, LeaseStore, Leases, Outcome, Reply, Result};

/// What a test does with each call.
pub trait Intercept: std::fmt::Debug + Send + Sync {
    /// Answers `call`: `store` is the real store; `wrapped` the whole wrapper, to send calls
    /// through the intercept again (a round as its two calls, each seen).
    fn execute(&self, wrapped: &dyn Leases, store: &LeaseStore, call: Call<'_>) -> Result<Reply>;

    /// Sees a closure-fenced write before the store runs it.
    fn fenced_with(&self) {}
}

/// `store` with `intercept` in front of its calls.
#[derive(Debug)]
pub struct Wrapped<I> {
    pub store: LeaseStore,
    pub intercept: I,
}

impl<I: Intercept> Leases for Wrapped<I> {
    fn execute(&self, call: Call<'_>) -> Result<Reply> {
        self.intercept.execute(self, &self.store, call)
    }

    fn fenced_with(
        &self,
        lease: &Lease,
        now: f64,
        finish: Finish,
        work: &mut dyn FnMut(&mut dyn FencedHandle) -> Result<()>,
    ) -> Result<Outcome<()>> {
        self.intercept.fenced_with();
        Leases::fenced_with(&self.store, lease, now, finish, work)
    }
}
