//! The pump thread: one mio `Poll` for every link, a command channel with a `Waker`, and the
//! timers of every link's client, watchdog, probe and parameter reads.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;
use std::time::Duration;

use mio::{Events, Poll, Token};

use super::link::LinkState;
use super::supervise::PauseDetector;
use super::{Clock, Cmd, LinkId, Notify};

/// The waker's token; link `i` has token `i + 1`.
pub(crate) const WAKER: Token = Token(0);

/// Reads one link may do before the others get a turn (edge-triggered: it is revisited).
const READ_BUDGET: usize = 64;

/// Receive buffer: holds any UDP datagram whole.
const RECV_BUF: usize = crate::transport::RECV_BUF_LEN;

pub(crate) struct Driver {
    pub poll: Poll,
    pub rx: Receiver<Cmd>,
    pub clock: Clock,
    pub notify: Arc<Notify>,
    pub waker: Arc<mio::Waker>,
    links: Vec<Option<LinkState>>,
    ids: HashMap<LinkId, usize>,
    ready: VecDeque<usize>,
    queued: Vec<bool>,
    buf: Vec<u8>,
    pause: PauseDetector,
}

impl Driver {
    pub fn new(
        poll: Poll,
        rx: Receiver<Cmd>,
        clock: Clock,
        notify: Arc<Notify>,
        waker: Arc<mio::Waker>,
    ) -> Self {
        Driver {
            poll,
            rx,
            clock,
            notify,
            waker,
            links: Vec::new(),
            ids: HashMap::new(),
            ready: VecDeque::new(),
            queued: Vec::new(),
            buf: vec![0; RECV_BUF],
            pause: PauseDetector::default(),
        }
    }

    pub fn run(mut self) {
        let mut events = Events::with_capacity(256);
        loop {
            let timeout = self.timeout();
            let timeout = self.pause.sleep(self.clock.now(), timeout);
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    break;
                }
            }
            // A pump back late was not running: its watchdogs start over before anything
            // else this turn (a command, a read) can service them (supervise module docs).
            self.paused();
            self.pause.expect(self.clock.now());
            let mut woken = false;
            for ev in events.iter() {
                if ev.token() == WAKER {
                    woken = true;
                } else {
                    self.mark_ready(ev.token().0 - 1);
                }
            }
            if !self.commands() {
                break;
            }
            let now = self.clock.now();
            if woken {
                // A command, or a probe's waker (a PX4 death): ask the probes that wake us.
                for l in self.links.iter_mut().flatten() {
                    l.on_wake(now);
                }
            }
            // A command that held the pump (or a stop during the turn) counts as a pause too.
            self.paused();
            // What is queued is read before the timers judge silence.
            self.read_ready();
            self.timers();
            self.notify.bump();
        }
        self.shutdown();
    }

    fn mark_ready(&mut self, i: usize) {
        if i < self.queued.len() && !self.queued[i] {
            self.queued[i] = true;
            self.ready.push_back(i);
        }
    }

    /// One turn for each link that was readable; those with more left go to the back.
    fn read_ready(&mut self) {
        for _ in 0..self.ready.len() {
            let Some(i) = self.ready.pop_front() else {
                break;
            };
            self.queued[i] = false;
            let now = self.clock.now();
            let more = match self.links.get_mut(i).and_then(Option::as_mut) {
                Some(l) => l.on_readable(now, &mut self.buf, READ_BUDGET),
                None => false,
            };
            if more {
                self.mark_ready(i);
            }
        }
    }

    /// A pump back much later than it planned was not running: its watchdogs start over.
    fn paused(&mut self) {
        let now = self.clock.now();
        if let Some(late_us) = self.pause.late_us(now) {
            for l in self.links.iter_mut().flatten() {
                l.on_late(now, late_us);
            }
        }
    }

    fn timers(&mut self) {
        let now = self.clock.now();
        for l in self.links.iter_mut().flatten() {
            if l.deadline().is_some_and(|d| d <= now) {
                l.on_timer(now);
            }
        }
    }

    fn timeout(&self) -> Option<Duration> {
        if !self.ready.is_empty() {
            return Some(Duration::ZERO);
        }
        let now = self.clock.now();
        let d = self
            .links
            .iter()
            .flatten()
            .filter_map(|l| l.deadline())
            .min()?;
        // Every deadline due was just serviced in `timers`, and the client never reports one
        // still due after that (`Client::next_deadline`).
        Some(Duration::from_micros(
            d.saturating_since(now).total_micros(),
        ))
    }

    /// Apply every queued command; false once the pump must stop.
    fn commands(&mut self) -> bool {
        loop {
            match self.rx.try_recv() {
                Ok(Cmd::Shutdown) => return false,
                Ok(cmd) => self.command(cmd),
                Err(TryRecvError::Empty) => return true,
                Err(TryRecvError::Disconnected) => return false,
            }
        }
    }

    fn command(&mut self, cmd: Cmd) {
        let now = self.clock.now();
        match cmd {
            Cmd::Shutdown => {}
            Cmd::AddLink {
                id,
                mut link,
                config,
                supervision,
                shared,
                reply,
            } => {
                let i = match self.links.iter().position(Option::is_none) {
                    Some(i) => i,
                    None => {
                        self.links.push(None);
                        self.queued.push(false);
                        self.links.len() - 1
                    }
                };
                let r = link.register(self.poll.registry(), Token(i + 1));
                match r {
                    Ok(()) => {
                        let mut state =
                            LinkState::new(*link, config, supervision, shared, &self.waker);
                        state.transmit(now);
                        state.after_batch(now);
                        self.links[i] = Some(state);
                        self.ids.insert(id, i);
                        // Anything that arrived before registration is waiting already.
                        self.mark_ready(i);
                        let _ = reply.send(Ok(()));
                    }
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                }
            }
            Cmd::RemoveLink { id, reply } => {
                if let Some(i) = self.ids.remove(&id) {
                    if let Some(mut l) = self.links[i].take() {
                        l.close(now);
                        let _ = l.link_mut().deregister(self.poll.registry());
                    }
                    self.queued[i] = false;
                }
                if let Some(r) = reply {
                    let _ = r.send(());
                }
            }
            Cmd::Call { id, f } => {
                match self.ids.get(&id).and_then(|&i| self.links[i].as_mut()) {
                    Some(l) => {
                        let reply = f(Some(super::LinkCtx {
                            now,
                            state: &mut *l,
                        }));
                        // Whatever the call queued leaves now, and its news is published
                        // before the caller hears back.
                        l.transmit(now);
                        l.after_batch(now);
                        reply();
                    }
                    None => f(None)(),
                }
            }
        }
    }

    fn shutdown(&mut self) {
        let now = self.clock.now();
        for slot in self.links.iter_mut() {
            if let Some(mut l) = slot.take() {
                l.close(now);
                let _ = l.link_mut().deregister(self.poll.registry());
            }
        }
        self.notify.bump();
    }
}
