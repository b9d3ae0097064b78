//! A wait on the tokio link as a future: it resolves to the engine's [`WaitResult`], and
//! dropping it aborts the wait and frees its slot (cancellation-safe).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use nexus_core::engine::{WaitId, WaitResult};
use nexus_host::pump::{PumpError, WaitError};

use crate::state::Shared;

/// A registered wait; resolves to its [`WaitResult`]. Dropping it aborts the wait.
#[must_use = "a wait is aborted when its future is dropped"]
pub struct WaitFuture {
    pub(crate) shared: Arc<Shared>,
    /// `None` once the result (or the refusal) was handed out.
    pub(crate) id: Option<Result<WaitId, WaitError>>,
}

impl WaitFuture {
    /// The engine's id of this wait (`None` if it was refused or has ended).
    pub fn id(&self) -> Option<WaitId> {
        match &self.id {
            Some(Ok(id)) => Some(*id),
            _ => None,
        }
    }

    /// End the wait with `cap` now, unless it already settled (then its own result).
    pub(crate) fn cap(&mut self) -> Result<WaitResult, WaitError> {
        let id = match self.id.take() {
            Some(Ok(id)) => id,
            Some(Err(e)) => return Err(e),
            None => return Err(WaitError::Pump(PumpError::LinkClosed)),
        };
        let now = self.shared.now();
        let mut st = self.shared.lock();
        let slot = st.waits.remove(&id);
        let r = match slot.and_then(|s| s.result) {
            Some(r) => Ok(r),
            None => st
                .client
                .cap(now, id)
                // Settled in the engine but not routed yet: take it directly.
                .or_else(|_| st.client.take_result(id))
                .map_err(WaitError::Refused),
        };
        st.route(now);
        r
    }
}

impl Future for WaitFuture {
    type Output = Result<WaitResult, WaitError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let id = match self.id.take() {
            None => return Poll::Ready(Err(WaitError::Pump(PumpError::LinkClosed))),
            Some(Err(e)) => return Poll::Ready(Err(e)),
            Some(Ok(id)) => id,
        };
        let mut st = self.shared.lock();
        let done = match st.waits.get_mut(&id) {
            Some(slot) => match slot.result.take() {
                Some(r) => Some(r),
                None => {
                    slot.waker = Some(cx.waker().clone());
                    None
                }
            },
            None => return Poll::Ready(Err(WaitError::Pump(PumpError::LinkClosed))),
        };
        match done {
            Some(r) => {
                st.waits.remove(&id);
                Poll::Ready(Ok(r))
            }
            None => {
                drop(st);
                self.id = Some(Ok(id));
                Poll::Pending
            }
        }
    }
}

impl Drop for WaitFuture {
    /// Cancellation: abort a wait still pending and free its slot, so nothing is left in the
    /// engine or in the routing table.
    fn drop(&mut self) {
        let Some(Ok(id)) = self.id.take() else {
            return;
        };
        let now = self.shared.now();
        let mut st = self.shared.lock();
        st.waits.remove(&id);
        let _ = st.client.abort_wait(now, id);
        // Its result (aborted, or settled but not routed yet) is nobody's: free the slot now.
        let _ = st.client.take_result(id);
        st.route(now);
    }
}
