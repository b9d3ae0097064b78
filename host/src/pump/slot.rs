//! A one-shot result a user thread waits for and the pump thread fills exactly once.

use crate::sync;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One result, filled once by the pump, taken once by the waiting caller.
#[derive(Debug)]
pub(crate) struct Slot<T> {
    state: Mutex<State<T>>,
    cv: Condvar,
}

#[derive(Debug)]
struct State<T> {
    value: Option<T>,
    filled: bool,
}

impl<T> Slot<T> {
    pub fn new() -> Self {
        Slot {
            state: Mutex::new(State {
                value: None,
                filled: false,
            }),
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        sync::lock(&self.state)
    }

    /// Fill the slot; false (and `value` dropped) if it was already filled: one result each.
    pub fn fill(&self, value: T) -> bool {
        let mut s = self.lock();
        if s.filled {
            return false;
        }
        s.filled = true;
        s.value = Some(value);
        drop(s);
        self.cv.notify_all();
        true
    }

    /// Whether a result was ever put in.
    pub fn is_filled(&self) -> bool {
        self.lock().filled
    }

    /// Take the result if it is there.
    pub fn try_take(&self) -> Option<T> {
        self.lock().value.take()
    }

    /// Wait up to `timeout` (forever with `None`) for the result and take it.
    pub fn take_timeout(&self, timeout: Option<Duration>) -> Option<T> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut s = self.lock();
        loop {
            if let Some(v) = s.value.take() {
                return Some(v);
            }
            if s.filled {
                // Already taken by another caller.
                return None;
            }
            match deadline {
                None => s = sync::wait(&self.cv, s),
                Some(d) => {
                    let left = d.checked_duration_since(Instant::now())?;
                    s = sync::wait_timeout(&self.cv, s, left);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn filled_once_taken_once() {
        let s = Slot::new();
        assert!(s.fill(1));
        assert!(!s.fill(2), "a second result is refused");
        assert_eq!(s.take_timeout(Some(Duration::ZERO)), Some(1));
        assert_eq!(s.take_timeout(Some(Duration::ZERO)), None);
        assert!(s.is_filled());
    }

    #[test]
    fn a_waiter_wakes_when_filled_from_another_thread() {
        let s = Arc::new(Slot::new());
        let s2 = Arc::clone(&s);
        let t = std::thread::spawn(move || s2.take_timeout(None));
        std::thread::sleep(Duration::from_millis(20));
        s.fill("done");
        assert_eq!(t.join().unwrap(), Some("done"));
    }

    #[test]
    fn times_out_empty() {
        let s: Slot<u8> = Slot::new();
        let t0 = Instant::now();
        assert_eq!(s.take_timeout(Some(Duration::from_millis(20))), None);
        assert!(t0.elapsed() >= Duration::from_millis(20));
    }
}
