//! The run's side of supervision: what the pump may ask the vehicle's owner (see
//! [`VehicleProbe`]), for the built-in simulated vehicle and for PX4 SITL.

use std::sync::{Arc, Mutex, RwLock};

use crate::launcher::{DeathCause, DeathWatch, Px4Process};
use crate::pump::VehicleProbe;
use crate::sim::{ExitStatus, SimHandle};
use crate::sync::{self, lock};

/// Why a stopped simulated vehicle is gone, when nothing else says.
pub const SIM_STOPPED: &str = "the simulated vehicle was stopped: its run closed";

/// The built-in simulated vehicle, shared by the run and the pump.
#[derive(Debug)]
pub(crate) struct SimProbe {
    handle: RwLock<Option<SimHandle>>,
    panic: Mutex<Option<String>>,
    lockstep: bool,
}

impl SimProbe {
    pub fn new(handle: SimHandle, lockstep: bool) -> Arc<SimProbe> {
        Arc::new(SimProbe {
            handle: RwLock::new(Some(handle)),
            panic: Mutex::new(None),
            lockstep,
        })
    }

    /// Use the vehicle while it runs (several threads may at once: a step and a probe).
    pub fn with<R>(&self, f: impl FnOnce(&SimHandle) -> R) -> Option<R> {
        let g = sync::read(&self.handle);
        g.as_ref().map(f)
    }

    /// Stop the vehicle, close its socket and join its thread (waits for a step in flight).
    pub fn stop(&self) {
        let h = sync::write(&self.handle).take();
        if let Some(h) = h {
            h.stop();
        }
    }
}

impl VehicleProbe for SimProbe {
    fn death(&self) -> Option<DeathCause> {
        let g = sync::read(&self.handle);
        let Some(h) = g.as_ref() else {
            return Some(DeathCause::SimStopped);
        };
        // Exit first, then the lines: the vehicle publishes its last lines with its exit, so
        // a PANIC line is never missed behind the SIGABRT that follows it.
        let exit = h.exit_status();
        let lines = h.output_lines();
        let mut panic = lock(&self.panic);
        if panic.is_none() {
            *panic = lines.into_iter().find(|l| l.contains("PANIC"));
        }
        if let Some(line) = panic.clone() {
            return Some(DeathCause::Panic { line });
        }
        if let Some(e) = exit {
            let cause = match e {
                ExitStatus::Code(code) => DeathCause::Exited { code },
                ExitStatus::Signal(signal) => DeathCause::Signaled {
                    signal,
                    core_dumped: false,
                },
            };
            return Some(cause);
        }
        if !h.is_running() {
            return Some(DeathCause::SimStopped);
        }
        None
    }

    fn set_speed(&self, factor: f32) -> Result<(), String> {
        if self.lockstep {
            return Err(LOCKSTEP_SPEED.to_owned());
        }
        // A factor the vehicle cannot keep up with would stop its clock (and look like a
        // death): refused, with the reason, as the program reader refuses a literal one.
        super::speed::check_sim_speed("the speed factor", factor as f64)?;
        match self.with(|h| h.set_speed(factor as f64)) {
            Some(r) => r.map_err(|e| e.to_string()),
            None => Err(SIM_STOPPED.to_owned()),
        }
    }

    fn free_running(&self) -> bool {
        !self.lockstep
    }
}

/// Why a lockstep run has no speed factor.
pub const LOCKSTEP_SPEED: &str =
    "a lockstep run advances only when it is stepped: it has no speed factor to change";

/// A PX4 SITL process, shared by the run and the pump.
#[derive(Debug)]
pub(crate) struct Px4Probe {
    process: Mutex<Option<Px4Process>>,
    watch: DeathWatch,
    speed: Option<f32>,
}

impl Px4Probe {
    pub fn new(process: Px4Process, speed: Option<f32>) -> Arc<Px4Probe> {
        Arc::new(Px4Probe {
            watch: process.watch(),
            process: Mutex::new(Some(process)),
            speed,
        })
    }

    /// Close PX4 (SIGTERM, then SIGKILL after the grace period) and remove its workdir.
    pub fn stop(&self) -> Result<(), crate::launcher::LaunchError> {
        let p = lock(&self.process).take();
        match p {
            Some(mut p) => p.close(),
            None => Ok(()),
        }
    }

    /// The console log's last lines.
    pub fn output_tail(&self) -> Vec<String> {
        lock(&self.process)
            .as_ref()
            .map(Px4Process::output_tail)
            .unwrap_or_default()
    }
}

impl VehicleProbe for Px4Probe {
    fn death(&self) -> Option<DeathCause> {
        self.watch.died()
    }

    fn declare_dead(&self, cause: DeathCause) -> DeathCause {
        self.watch.declare_dead(cause.clone());
        self.watch.died().unwrap_or(cause)
    }

    fn set_speed(&self, factor: f32) -> Result<(), String> {
        let now = self
            .speed
            .map_or_else(|| "1 (real time)".to_owned(), |s| s.to_string());
        Err(format!(
            "cannot change PX4's speed to {factor}: PX4_SIM_SPEED_FACTOR is fixed at launch \
             (this run: {now}); start the run with another speed"
        ))
    }

    fn add_waker(&self, waker: Arc<mio::Waker>) -> bool {
        self.watch.add_waker(waker);
        true
    }
}
