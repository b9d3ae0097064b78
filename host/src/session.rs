//! [`Session`]: the wait engine as a service on one run, and [`Sessions`], the registry that closes
//! runs on request (`kill_instance`) or when they sit unused (the idle reaper).
//!
//! A session is a run ([`Run`]) and the [`OffboardClient`] connected to it. Its
//! [`Session::wait`] is the wait engine's wait (the service's `wait_until`): a [`Wait`]
//! (condition, op, `timeout_s` in sim seconds, `since_seq`, `relative`, guards, reactions)
//! evaluated by the pump after every message, plus a wall-clock cap (`Option<Duration>`).
//! Every call returns a [`WaitResult`] with its reason:
//!
//! * `met`, `timeout`, `guard` from the engine; `died` when the vehicle exited, panicked,
//!   went silent or its clock stalled (`snapshot.error` says which);
//! * `cap` when the wall cap came first: the wait is not over, call again with
//!   `since_seq = snapshot.seq` and no text is missed (the cap is taken on the pump thread,
//!   so it races safely with a settle: exactly one result per wait);
//! * `closed` when the session closed during the wait ([`Session::close_sitl`],
//!   [`Sessions::kill_instance`], the idle reaper).
//!
//! Waits from several threads on one session run concurrently (up to
//! [`crate::pump::WAITS`]). A relative `sim_time` counts from the tick the previous wait or
//! step on this session settled.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nexus_core::engine::{Wait, WaitResult};
use nexus_core::telemetry::{Snapshot, Text};

use crate::error::SessionError;
use crate::offboard_client::OffboardClient;
use crate::pump::{HostProgram, LinkHandle, LinkStatus, ProgramReport};
use crate::run::{Run, RunOptions};
use crate::sync::lock;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One run and its offboard client, served as the wait engine's service. Cheap to clone,
/// `Send + Sync`; the run closes when [`Session::close_sitl`] is called or the last clone goes.
#[derive(Debug, Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    id: u64,
    // Field order is drop order: the client's waits end `closed` before the vehicle stops.
    client: OffboardClient,
    sim: Run,
    last_used: Mutex<Instant>,
    calls: AtomicUsize,
    closed: Mutex<Option<String>>,
    on_close: Mutex<Hook>,
}

/// What a session's close hook ([`Session::on_close`]) is told.
#[derive(Debug, Clone)]
#[non_exhaustive] // more fields may come
pub struct Closed {
    /// Why the session closed: "close_sitl", "kill_instance(3)", "idle for 600.0 s: closed by
    /// the idle reaper", "the service closed", "the session was dropped".
    pub why: String,
    /// The link's status just before it closed (the last snapshot, mission, counters);
    /// `None` when the client was not open.
    pub last_status: Option<LinkStatus>,
}

type CloseHook = Box<dyn FnOnce(&Closed) + Send>;

/// The close hook, until the session closes; then what it was told.
enum Hook {
    Waiting(Option<CloseHook>),
    Ran(Box<Closed>),
}

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Hook::Waiting(h) => write!(f, "Waiting({})", if h.is_some() { "set" } else { "none" }),
            Hook::Ran(c) => write!(f, "Ran({:?})", c.why),
        }
    }
}

impl Inner {
    /// End the waits (`closed`), stop the vehicle, then run the close hook.
    fn shut(&self, why: &str) {
        let last_status = self.client.status();
        self.client.close();
        self.sim.close();
        let closed = Closed {
            why: why.to_owned(),
            last_status,
        };
        let hook = match std::mem::replace(
            &mut *lock(&self.on_close),
            Hook::Ran(Box::new(closed.clone())),
        ) {
            Hook::Waiting(h) => h,
            Hook::Ran(_) => None,
        };
        if let Some(h) = hook {
            h(&closed);
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if matches!(&*lock(&self.on_close), Hook::Waiting(_)) {
            self.shut("the session was dropped");
        }
    }
}

/// Marks a session in use for the length of a call.
struct InUse<'a>(&'a Inner);

impl Drop for InUse<'_> {
    fn drop(&mut self) {
        *lock(&self.0.last_used) = Instant::now();
        self.0.calls.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Session {
    /// Start a run with `options`, connect a client to its offboard link (waiting up to
    /// `connect_timeout_sim_s` sim seconds for PX4's heartbeat) and serve it.
    pub fn start(options: RunOptions, connect_timeout_sim_s: f64) -> Result<Session, SessionError> {
        let sim = Run::started(options)?;
        let client = OffboardClient::connect(&sim, connect_timeout_sim_s)?;
        Ok(Session::new(sim, client))
    }

    /// Serve a started run and a client connected to it.
    pub fn new(sim: Run, client: OffboardClient) -> Session {
        Session {
            inner: Arc::new(Inner {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                client,
                sim,
                last_used: Mutex::new(Instant::now()),
                calls: AtomicUsize::new(0),
                closed: Mutex::new(None),
                on_close: Mutex::new(Hook::Waiting(None)),
            }),
        }
    }

    /// The session's id (unique in the process).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// The run's SITL instance.
    pub fn instance(&self) -> u8 {
        self.inner.sim.instance()
    }

    /// The offboard client (every verb and query of the Python OffboardClient).
    pub fn client(&self) -> &OffboardClient {
        &self.inner.client
    }

    /// The run.
    pub fn sim(&self) -> &Run {
        &self.inner.sim
    }

    /// Why the session closed, once it has.
    pub fn closed(&self) -> Option<String> {
        lock(&self.inner.closed).clone()
    }

    /// Whether the session is closed.
    pub fn is_closed(&self) -> bool {
        self.closed().is_some()
    }

    /// Run `f` once when the session closes — [`Session::close_sitl`],
    /// [`Sessions::kill_instance`], the idle reaper, [`Sessions::close_all`], or its last clone
    /// dropped — after its waits ended `closed` and its vehicle stopped (so a recording of its
    /// link is complete), on the thread that closed it; at once when it has closed already.
    /// Replaces a hook set before that has not run. For what a service keeps of a session
    /// past its end (its report, its files); `f` must not hold a clone of the session.
    pub fn on_close(&self, f: impl FnOnce(&Closed) + Send + 'static) {
        let mut hook = lock(&self.inner.on_close);
        match &mut *hook {
            Hook::Waiting(h) => *h = Some(Box::new(f)),
            Hook::Ran(closed) => {
                let closed = (**closed).clone();
                drop(hook);
                f(&closed);
            }
        }
    }

    /// Wall time since a call last started or ended. A call in progress counts from its
    /// start, so a wait longer than the idle limit is reaped (it ends `closed`).
    pub fn idle_for(&self) -> Duration {
        lock(&self.inner.last_used).elapsed()
    }

    fn begin(&self) -> Result<(InUse<'_>, LinkHandle), SessionError> {
        if let Some(why) = self.closed() {
            return Err(SessionError::Closed(why));
        }
        self.inner.calls.fetch_add(1, Ordering::SeqCst);
        *lock(&self.inner.last_used) = Instant::now();
        let guard = InUse(&self.inner);
        let link = self.inner.client.link().map_err(|_| {
            SessionError::Closed(self.closed().unwrap_or_else(|| "client closed".into()))
        })?;
        Ok((guard, link))
    }

    /// Wait for `wait` (its `timeout_s` in sim seconds, required), for at most `wall_cap` of
    /// wall time (`None`: no cap). Ends with a [`WaitResult`] whose reason is met, timeout,
    /// guard, cap, died or closed; errors only when it cannot wait (closed, invalid).
    pub fn wait(
        &self,
        wait: &Wait,
        wall_cap: Option<Duration>,
    ) -> Result<WaitResult, SessionError> {
        self.wait_explained(wait, wall_cap).map(|(r, _)| r)
    }

    /// [`Session::wait`], with why the wait ended without its condition: what was
    /// pending and why it did not happen, in PX4's words where it gave any ("arm not sent: PX4
    /// not armable for 25 s …", "guard `altitude <= 3 m` fired at 2.9 m"); `None` when met,
    /// capped or closed.
    pub fn wait_explained(
        &self,
        wait: &Wait,
        wall_cap: Option<Duration>,
    ) -> Result<(WaitResult, Option<String>), SessionError> {
        let (_use, link) = self.begin()?;
        Ok(self
            .inner
            .sim
            .wait_on_link_explained(&link, wait, wall_cap)?)
    }

    /// Run a step program (the wait engine's steps) to its end; with a wall `limit`, abort it when
    /// the limit passes. The report has every step's [`WaitResult`].
    pub fn run_steps(
        &self,
        program: HostProgram,
        limit: Option<Duration>,
    ) -> Result<ProgramReport, SessionError> {
        let (_use, link) = self.begin()?;
        Ok(self.inner.sim.run_program(&link, program, limit)?)
    }

    /// Abort the running program (`abort_steps`): its step ends `aborted`, the program too.
    pub fn abort_steps(&self) -> Result<(), SessionError> {
        let (_use, link) = self.begin()?;
        Ok(link.abort_program()?)
    }

    /// The vehicle now.
    pub fn snapshot(&self) -> Result<Snapshot, SessionError> {
        let (_use, link) = self.begin()?;
        Ok(link.with_status(|s| s.snapshot.clone()))
    }

    /// The STATUSTEXTs kept with `seq` after `since_seq`, oldest first.
    pub fn texts_since(&self, since_seq: u32) -> Result<Vec<Text>, SessionError> {
        let (_use, link) = self.begin()?;
        link.call(move |ctx| {
            ctx.client()
                .telemetry()
                .texts()
                .after(since_seq)
                .cloned()
                .collect()
        })
        .map_err(|e| SessionError::Wait(e.into()))
    }

    /// Close the session's SITL: waits in progress end `closed`, a program `aborted`, the
    /// vehicle stops. Idempotent.
    pub fn close_sitl(&self) {
        self.close("close_sitl");
    }

    pub(crate) fn close(&self, why: &str) {
        {
            let mut c = lock(&self.inner.closed);
            if c.is_some() {
                return;
            }
            *c = Some(why.to_owned());
        }
        // Waits first (closed), then the vehicle: a vehicle stopping first would end them died.
        self.inner.shut(why);
    }
}

/// The sessions a service holds, with the idle reaper. Dropping it closes every session and
/// joins the reaper.
#[derive(Debug)]
pub struct Sessions {
    registry: Arc<Registry>,
    reaper: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Debug)]
struct Registry {
    sessions: Mutex<Vec<Session>>,
    idle_limit: Option<Duration>,
    stop: Mutex<bool>,
    cv: Condvar,
}

impl Registry {
    fn reap(&self) -> usize {
        let Some(limit) = self.idle_limit else {
            return 0;
        };
        let idle: Vec<Session> = {
            let mut s = lock(&self.sessions);
            let (gone, keep): (Vec<_>, Vec<_>) = s
                .drain(..)
                .partition(|x| x.idle_for() >= limit || x.is_closed());
            *s = keep;
            gone
        };
        let n = idle.iter().filter(|s| !s.is_closed()).count();
        for s in idle {
            s.close(&format!(
                "idle for {:.1} s: closed by the idle reaper",
                s.idle_for().as_secs_f32()
            ));
        }
        n
    }
}

impl Sessions {
    /// A registry; with `idle_limit`, a reaper thread closes sessions unused for that long
    /// (wall). Their waits in progress end `closed`.
    pub fn new(idle_limit: Option<Duration>) -> Sessions {
        let registry = Arc::new(Registry {
            sessions: Mutex::new(Vec::new()),
            idle_limit,
            stop: Mutex::new(false),
            cv: Condvar::new(),
        });
        let reaper = idle_limit.and_then(|limit| {
            let r = Arc::clone(&registry);
            let period = (limit / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
            std::thread::Builder::new()
                .name("nexus-reaper".into())
                .spawn(move || loop {
                    let stop = lock(&r.stop);
                    let stop = crate::sync::wait_timeout(&r.cv, stop, period);
                    if *stop {
                        return;
                    }
                    drop(stop);
                    r.reap();
                })
                .ok()
        });
        Sessions {
            registry,
            reaper: Mutex::new(reaper),
        }
    }

    /// Start a session (see [`Session::start`]) and hold it.
    pub fn open(
        &self,
        options: RunOptions,
        connect_timeout_sim_s: f64,
    ) -> Result<Session, SessionError> {
        let s = Session::start(options, connect_timeout_sim_s)?;
        self.add(s.clone());
        Ok(s)
    }

    /// Hold a session.
    pub fn add(&self, session: Session) {
        lock(&self.registry.sessions).push(session);
    }

    /// The session with this id.
    pub fn get(&self, id: u64) -> Option<Session> {
        lock(&self.registry.sessions)
            .iter()
            .find(|s| s.id() == id)
            .cloned()
    }

    /// The open session running SITL instance `instance`.
    pub fn by_instance(&self, instance: u8) -> Option<Session> {
        lock(&self.registry.sessions)
            .iter()
            .find(|s| s.instance() == instance && !s.is_closed())
            .cloned()
    }

    /// The sessions held.
    pub fn list(&self) -> Vec<Session> {
        lock(&self.registry.sessions).clone()
    }

    /// Kill SITL instance `instance`: its session's waits end `closed`, the vehicle stops
    /// (PX4: SIGTERM, then SIGKILL), the session is dropped.
    pub fn kill_instance(&self, instance: u8) -> Result<(), SessionError> {
        let s = {
            let mut all = lock(&self.registry.sessions);
            let i = all
                .iter()
                .position(|s| s.instance() == instance && !s.is_closed())
                .ok_or(SessionError::NoSuchInstance(instance))?;
            all.remove(i)
        };
        s.close(&format!("kill_instance({instance})"));
        Ok(())
    }

    /// Close `session` ([`Session::close_sitl`]: its waits end `closed`, the vehicle stops) and
    /// drop it from the registry; whether the registry held it.
    pub fn close_sitl(&self, session: &Session) -> bool {
        let held = {
            let mut all = lock(&self.registry.sessions);
            let before = all.len();
            all.retain(|s| s.id() != session.id());
            all.len() != before
        };
        session.close_sitl();
        held
    }

    /// Close the sessions unused for the idle limit now; how many were closed.
    pub fn reap_idle(&self) -> usize {
        self.registry.reap()
    }

    /// Close every session.
    pub fn close_all(&self) {
        let all: Vec<Session> = lock(&self.registry.sessions).drain(..).collect();
        for s in all {
            s.close("the service closed");
        }
    }
}

impl Drop for Sessions {
    fn drop(&mut self) {
        *lock(&self.registry.stop) = true;
        self.registry.cv.notify_all();
        if let Some(t) = lock(&self.reaper).take() {
            let _ = t.join();
        }
        self.close_all();
    }
}
