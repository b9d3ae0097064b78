//! PX4 SITL's simulated battery (`battery_simulator`) and PX4's battery estimate (`lib/battery`).
//!
//! * While armed the charge drains linearly, full to empty in SIM_BAT_DRAIN seconds, never below
//!   SIM_BAT_MIN_PCT (PX4 SITL's defaults: 60 s, 50 %: a default flight never runs low); disarmed
//!   it is full again. The voltage is BAT1_N_CELLS × the cell voltage, linear between
//!   BAT1_V_EMPTY and BAT1_V_CHARGED; MAV_CMD_INJECT_FAILURE battery "off" pins it at empty.
//! * PX4's estimate: the cell voltage through a 1 s low-pass filter, mapped linearly between
//!   empty and charged (no current sensor in SITL), is the state of charge; below
//!   BAT_LOW_THR / BAT_CRIT_THR / BAT_EMERGEN_THR it warns LOW / CRITICAL / EMERGENCY (armed,
//!   only ever worse). Measured on PX4 SITL (SIM_BAT_MIN_PCT 2): 100 % at arming, 3 % after 64 s.
//!
//! What the warnings do is the vehicle's (`battery_failsafe`): PX4's texts and COM_LOW_BAT_ACT.

use super::params::{Params, P};

/// battery_status WARNING_* (and MAV_BATTERY_CHARGE_STATE − 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Warning {
    /// Above BAT_LOW_THR.
    #[default]
    None,
    /// Below BAT_LOW_THR.
    Low,
    /// Below BAT_CRIT_THR.
    Critical,
    /// Below BAT_EMERGEN_THR.
    Emergency,
}

/// The simulated battery and PX4's estimate of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatteryModel {
    /// The simulator's charge, 0..1.
    pub charge: f32,
    /// Pinned at empty by an injected failure.
    pub forced_empty: bool,
    /// The filtered cell voltage, V (`None` until the first sample).
    cell_v: Option<f32>,
    /// PX4's warning.
    pub warning: Warning,
}

impl Default for BatteryModel {
    fn default() -> Self {
        BatteryModel {
            charge: 1.0,
            forced_empty: false,
            cell_v: None,
            warning: Warning::None,
        }
    }
}

/// The cell voltage filter's time constant, s (`_cell_voltage_filter_v`).
pub const CELL_FILTER_S: f32 = 1.0;

impl BatteryModel {
    /// Advance `dt_s` (armed or not).
    pub fn step(&mut self, p: &Params, armed: bool, dt_s: f32) {
        if p.i(P::SIM_BAT_ENABLE) == 0 {
            return;
        }
        if armed {
            let drain = p.f(P::SIM_BAT_DRAIN).max(1e-3);
            self.charge -= dt_s / drain;
        } else {
            self.charge = 1.0;
        }
        self.charge = self
            .charge
            .max(p.f(P::SIM_BAT_MIN_PCT) / 100.0)
            .clamp(0.0, 1.0);
        let (empty, full) = (p.f(P::BAT1_V_EMPTY), p.f(P::BAT1_V_CHARGED));
        let v = if self.forced_empty {
            empty
        } else {
            empty + self.charge * (full - empty)
        };
        let f = match self.cell_v {
            None => v,
            Some(prev) => prev + (v - prev) * (dt_s / (CELL_FILTER_S + dt_s)),
        };
        self.cell_v = Some(f);
        let w = self.level(p);
        self.warning = if armed { self.warning.max(w) } else { w };
    }

    /// PX4's state of charge, 0..1.
    pub fn remaining(&self, p: &Params) -> f32 {
        let (empty, full) = (p.f(P::BAT1_V_EMPTY), p.f(P::BAT1_V_CHARGED));
        let v = self.cell_v.unwrap_or(full);
        ((v - empty) / (full - empty).max(1e-3)).clamp(0.0, 1.0)
    }

    /// The pack voltage PX4 reports, mV.
    pub fn voltage_mv(&self, p: &Params) -> u16 {
        let cells = p.i(P::BAT1_N_CELLS).max(1) as f32;
        let v = self.cell_v.unwrap_or(p.f(P::BAT1_V_CHARGED));
        (v * cells * 1000.0)
            .round()
            .clamp(0.0, u16::MAX as f32 - 1.0) as u16
    }

    fn level(&self, p: &Params) -> Warning {
        let soc = self.remaining(p);
        if soc < p.f(P::BAT_EMERGEN_THR) {
            Warning::Emergency
        } else if soc < p.f(P::BAT_CRIT_THR) {
            Warning::Critical
        } else if soc < p.f(P::BAT_LOW_THR) {
            Warning::Low
        } else {
            Warning::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drains_while_armed_down_to_sim_bat_min_pct_and_warns_in_steps() {
        let mut p = Params::new(1);
        let mut b = BatteryModel::default();
        b.step(&p, false, 0.01);
        assert_eq!((b.remaining(&p), b.voltage_mv(&p)), (1.0, 16_200));
        // PX4 SITL's defaults: 50 % after 30 s armed, and there it stays.
        for _ in 0..6_000 {
            b.step(&p, true, 0.01);
        }
        assert!((b.remaining(&p) - 0.5).abs() < 0.01, "{}", b.remaining(&p));
        assert_eq!(b.warning, Warning::None);
        // Down to 2 %: LOW below 15 %, CRITICAL below 7 %, EMERGENCY below 5 %.
        p.set_numeric("SIM_BAT_MIN_PCT", 2.0).unwrap();
        let mut seen = vec![];
        for _ in 0..5_000 {
            b.step(&p, true, 0.01);
            if seen.last() != Some(&b.warning) {
                seen.push(b.warning);
            }
        }
        assert_eq!(
            seen,
            [
                Warning::None,
                Warning::Low,
                Warning::Critical,
                Warning::Emergency
            ]
        );
        // Disarmed: full again.
        for _ in 0..1_000 {
            b.step(&p, false, 0.01);
        }
        assert!(b.remaining(&p) > 0.99);
        assert_eq!(b.warning, Warning::None);
        // An injected failure: empty within the filter's time.
        b.forced_empty = true;
        for _ in 0..1_000 {
            b.step(&p, false, 0.01);
        }
        assert_eq!(b.warning, Warning::Emergency);
        assert_eq!(b.voltage_mv(&p), 14_400);
    }
}
