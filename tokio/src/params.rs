//! Parameters on the tokio link: a read and a set that waits for PX4's echo, as futures. The
//! machine is the host's [`ParamReads`] (the threaded pump's too); the set is the core's, its
//! end read from the link's log.

use std::time::Duration;

use nexus_core::action::ParamValue;
use nexus_host::error::OffboardClientError;
use nexus_host::groups::Facade;
use nexus_host::pump::{set_end, set_not_sent, Param, ParamAnswer, ParamError};
use tokio::sync::oneshot;

use crate::AsyncClient;

/// A read's answer, to the future awaiting it.
pub(crate) struct Answer(oneshot::Sender<Result<Param, ParamError>>);

impl ParamAnswer for Answer {
    fn fill(self, answer: Result<Param, ParamError>) {
        // A future dropped before its answer came wants none.
        let _ = self.0.send(answer);
    }

    fn wanted(&self) -> bool {
        !self.0.is_closed()
    }
}

impl AsyncClient {
    /// Read a parameter (PARAM_REQUEST_READ → PARAM_VALUE), resent on the measured timer
    /// until it comes or `timeout` (wall) passes ([`ParamError::Timeout`]); at once
    /// [`ParamError::Refused`] when the vehicle answers PARAM_ERROR (each in
    /// [`OffboardClientError::Param`]); [`OffboardClientError::NotOpen`] on a closed client.
    /// The threaded client's `OffboardClient::param_get`, as a future; dropping it stops the
    /// resends.
    pub async fn param_get(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<Param, OffboardClientError> {
        let (tx, rx) = oneshot::channel();
        let now = self.shared.now();
        {
            let mut st = self.shared.lock();
            if st.status.closed {
                return Err(OffboardClientError::NotOpen);
            }
            let st = &mut *st;
            let died = st.status.died.as_ref();
            st.params
                .start(now, name.to_owned(), timeout, Answer(tx), died);
        }
        self.shared.kick.notify_one();
        // The task ended without answering: the link is closed.
        let answer = rx
            .await
            .unwrap_or_else(|_| Err(ParamError::Closed(name.to_owned())));
        Ok(answer?)
    }

    /// Set parameter `name` to `value` as `ParamApi::set_param` does, then wait until PX4
    /// echoes it: the echo is what PX4 stored, with its index and count. Ends at once when
    /// PX4 refuses it ([`ParamError::Refused`]), when the machine gives up
    /// ([`ParamError::GaveUp`]), or when `timeout` (wall) passes ([`ParamError::SetTimeout`];
    /// the machine keeps resending it), each in [`OffboardClientError::Param`];
    /// [`OffboardClientError::NotOpen`] on a closed client. The threaded client's
    /// `OffboardClient::set_param_wait`, as a future.
    pub async fn set_param_wait(
        &self,
        name: &str,
        value: ParamValue,
        timeout: Duration,
    ) -> Result<Param, OffboardClientError> {
        let mut news = self.shared.changed.subscribe();
        let mut seen = self.shared.lock().event_seq;
        let n = name.to_owned();
        self.apply(move |c, _| Ok(c.set_param(&n, value)))?
            .map_err(|why| set_not_sent(name, why))?;
        let end = async {
            loop {
                {
                    let st = self.shared.lock();
                    let (events, now_seq) = st.events_after(seen);
                    if let Some(end) = events.into_iter().find_map(|ev| set_end(ev, name)) {
                        return end;
                    }
                    seen = now_seq;
                    if st.status.closed {
                        return Err(ParamError::Closed(name.to_owned()));
                    }
                }
                if news.changed().await.is_err() {
                    return Err(ParamError::Closed(name.to_owned()));
                }
            }
        };
        let end = tokio::time::timeout(timeout, end)
            .await
            .unwrap_or_else(|_| {
                Err(ParamError::SetTimeout {
                    name: name.to_owned(),
                    timeout,
                })
            });
        Ok(end?)
    }
}
