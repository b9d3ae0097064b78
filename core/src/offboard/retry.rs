//! One request resent until answered, on the link's measured retry timer ([`super::rtt`]), and
//! given up after a bounded number of sends: the piece every transfer and command shares
//! (mission, geofence and rally upload counts, downloads, clears; modes, arms, restarts).

use super::clock::{Soonest, Stamp};
use super::rtt::RttEstimator;
use crate::time::Instant;

/// What a resent request should do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Due {
    /// Its timer is running.
    Wait,
    /// Send it now (the send is already counted).
    Send,
    /// The timer ran out after the last allowed send: give up.
    GiveUp { sends: u8 },
}

/// The sends of one request and whether the last one was answered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Resend {
    /// Sends so far (the first included).
    pub sends: u8,
    /// When it last went out.
    pub last_tx: Option<Stamp>,
    /// The last send was answered (a resend then is no timeout: nothing backs off).
    answered: bool,
}

impl Resend {
    pub const fn new() -> Self {
        Resend {
            sends: 0,
            last_tx: None,
            answered: false,
        }
    }

    /// A request that went out once, at `now` (its first send: no time-out, no round trip).
    pub const fn sent_at(now: Stamp) -> Self {
        Resend {
            sends: 1,
            last_tx: Some(now),
            answered: false,
        }
    }

    /// Whether it is due: never sent, or its timer of `timer_ms` ran out.
    pub fn due(&self, now: Stamp, timer_ms: u64) -> bool {
        self.last_tx.is_none_or(|s| s.timer_done(now, timer_ms))
    }

    /// Take in the wall deadline of its timer (none for a sim-time timer); due at once when
    /// it was never sent.
    pub fn deadline(&self, timer_ms: u64, d: &mut Soonest) {
        match &self.last_tx {
            None => d.at(Instant::ZERO),
            Some(s) => d.timer(Some(s), timer_ms),
        }
    }

    /// It goes out at `now`. Resending one that was not answered is a timeout: the timer
    /// backs off.
    #[inline(never)] // from every request and transfer: one copy
    pub fn sent(&mut self, now: Stamp, rtt: &mut RttEstimator) {
        if self.sends > 0 && !self.answered {
            rtt.timed_out();
        }
        self.sends = self.sends.saturating_add(1);
        self.last_tx = Some(now);
        self.answered = false;
    }

    /// Its answer came at `now`: a round-trip sample when it went out once (Karn's rule: the
    /// answer to a resent request may be to either send).
    #[inline(never)]
    pub fn answered(&mut self, now: Stamp, rtt: &mut RttEstimator) {
        if !self.answered && self.sends == 1 {
            if let Some(s) = self.last_tx {
                rtt.sample(s.timer_ms(now));
            }
        }
        self.answered = true;
    }

    /// The timer and the limit: send (counted) when due and fewer than `max_sends` went out,
    /// give up when due after `max_sends`.
    #[inline(never)]
    pub fn poll(
        &mut self,
        now: Stamp,
        timer_ms: u64,
        max_sends: u8,
        rtt: &mut RttEstimator,
    ) -> Due {
        if !self.due(now, timer_ms) {
            return Due::Wait;
        }
        if self.sends >= max_sends {
            return Due::GiveUp { sends: self.sends };
        }
        self.sent(now, rtt);
        Due::Send
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Stamp {
        Stamp {
            wall: Instant::from_millis(ms),
            sim_ms: Some(ms),
        }
    }

    #[test]
    fn karn_and_back_off() {
        let mut rtt = RttEstimator::new();
        let mut r = Resend::new();
        assert_eq!(r.poll(at(0), 1000, 3, &mut rtt), Due::Send);
        assert_eq!(r.poll(at(999), 1000, 3, &mut rtt), Due::Wait);
        // Unanswered for a whole timer: resent, and the timer backs off.
        assert_eq!(r.poll(at(1000), 1000, 3, &mut rtt), Due::Send);
        assert_eq!(rtt.backoff(), 1);
        // The answer to a resent request is no sample.
        r.answered(at(1300), &mut rtt);
        assert_eq!(rtt.samples(), 0);
        // A resend after an answer (e.g. the heartbeat lags the ack) is no timeout.
        assert_eq!(r.poll(at(2000), 1000, 3, &mut rtt), Due::Send);
        assert_eq!(rtt.backoff(), 1);
        assert_eq!(
            r.poll(at(4000), 1000, 3, &mut rtt),
            Due::GiveUp { sends: 3 }
        );
        // A request sent once gives a sample, which ends the back-off.
        let mut r = Resend::new();
        r.sent(at(5000), &mut rtt);
        r.answered(at(5250), &mut rtt);
        r.answered(at(5900), &mut rtt);
        assert_eq!(rtt.samples(), 1);
        assert_eq!(rtt.srtt_ms(), Some(250.0));
        assert_eq!(rtt.backoff(), 0);
        // `sent_at` is a first send: the same as sending a new one, and no time-out.
        let mut r = Resend::new();
        r.sent(at(6000), &mut rtt);
        assert_eq!(Resend::sent_at(at(6000)), r);
        assert_eq!(rtt.backoff(), 0);
    }
}
