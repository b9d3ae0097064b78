//! Locks that outlive a panic: every mutex, read-write lock and condition variable of this
//! crate is taken through these (private to it).
//!
//! A thread that panicked while holding a lock leaves plain data behind (counters, slots,
//! status): there is no invariant a half-done update could break that matters more than
//! every other caller going on, so a poisoned lock is used as it is rather than spreading
//! the panic to the pump, the waiters and the user's threads.

use std::sync::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

/// Lock `m`, poisoned or not.
pub(crate) fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Take `l` for reading, poisoned or not.
pub(crate) fn read<T: ?Sized>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

/// Take `l` for writing, poisoned or not.
pub(crate) fn write<T: ?Sized>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|p| p.into_inner())
}

/// Wait on `cv` until notified (or woken spuriously), poisoned or not.
pub(crate) fn wait<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    cv.wait(guard).unwrap_or_else(|p| p.into_inner())
}

/// Wait on `cv` until notified or `timeout` (wall) passes, poisoned or not.
pub(crate) fn wait_timeout<'a, T>(
    cv: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
) -> MutexGuard<'a, T> {
    match cv.wait_timeout(guard, timeout) {
        Ok((g, _)) => g,
        Err(p) => p.into_inner().0,
    }
}
