//! A simulated PX4 vehicle (multicopter, SITL instance N) that speaks PX4's MAVLink faithfully.
//!
//! It is the default peer of every end-to-end test and of the `nexus` command when no PX4 build
//! is given, and it runs alone (`nexus sim`) for QGroundControl or pymavlink. Fidelity is the
//! point: behaviour follows `docs/px4-wire.md` (measured PX4 SITL, SIH quadrotor) and, where that
//! is silent, PX4's sources (commander, navigator, `mavlink_mission.cpp`, the mavlink streams).
//!
//! Two layers:
//! * [`Vehicle`]: a pure, deterministic, in-memory model driven sans-IO
//!   ([`Vehicle::handle_datagram`] / [`Vehicle::step`] / [`Vehicle::poll_transmit`]); it owns
//!   its clock (`time_boot_ms`), so inbound frames are handled at its current sim time;
//! * [`SimHandle`]: a thin UDP server around it, one thread per instance, real time with a
//!   speed factor or lockstep (the host steps sim time), with ground truth for tests, faults,
//!   the console log and the exit status for a supervisor. A client learns the ground truth
//!   over the wire only, as from PX4 SITL: HIL_STATE_QUATERNION when asked.
//!
//! # On the wire
//! Bind 14580+N, send to 14540+N until a client speaks, then latch onto the first client for the
//! vehicle's life; system id N+1, component 1; MAVLink 2 out, MAVLink 1 or 2 in. HEARTBEAT type
//! 2/autopilot 12; base_mode = CUSTOM_MODE_ENABLED | auto 0x1c / manual 0x50 (Acro 0x40, Offboard
//! 0x10) | armed 0x80 (`streams/HEARTBEAT.hpp`); system_status UNINIT until the prearm checks pass
//! for the selected mode, STANDBY, ACTIVE armed, CRITICAL in failsafe. Streams at PX4's rates
//! (docs/px4-wire.md §Streams), including messages a client must skip (ATTITUDE_QUATERNION,
//! HIGHRES_IMU, ODOMETRY, …) and PX4's own gimbal/camera COMMAND_LONGs (1001, 1000, 2003, addressed
//! to itself, sent three times a second apart at ~4 s after boot and at arming).
//!
//! # Decisions taken from PX4's sources (where docs/px4-wire.md is silent)
//! * STATUSTEXT (`streams/STATUSTEXT.hpp`): a uORB queue of 8, drained only while a GCS or
//!   onboard-controller HEARTBEAT was seen in the last 3 s, entries older than 5 s dropped; ids
//!   count from 0; 50-character chunks, the last zero-padded (exactly 50: no terminator).
//!   The stream starts at 2.7 s, so boot texts arrive late, together.
//! * Mode changes (`UserModeIntention`): always accepted disarmed; armed only if the mode can
//!   run; Land forced; the rejection text "Switching to X is currently not available" only for
//!   DO_SET_MODE from a mission planner (compid 190), as commander does; on disarm the mode
//!   reverts to the last intended mode that does not prevent arming (Land/RTL → Hold).
//! * Arming: the checks of the selected mode; throttle checks in manual modes; the stick
//!   gesture (throttle < 10 %, yaw > 80 % held 1 s, fixed on PX4 main) only in manual modes;
//!   "Armed by external command", "Disarmed by landing", "… by auto preflight disarming"
//!   (`arm_disarm_reason_str`); home set at arming; COM_FLIGHT_UUID bumped at disarm and sent
//!   unsolicited.
//! * Takeoff done within NAV_MC_ALT_RAD → Hold keeps the takeoff setpoint; "Takeoff detected"
//!   and "Landing detected" from the land detector; RTL with PX4's cone-limited return
//!   altitude and its texts (`rtl_direct.cpp`); mission climb "Climb to … meters above home"
//!   to the first position item, "Mission finished, loitering/landed", an RTL item hands over.
//! * Mission protocol (`mavlink_mission.cpp`): see [`mission`], including PX4's CRC32.
//! * Parameters: an unknown name (read or set) gets PARAM_ERROR DOES_NOT_EXIST, a PARAM_SET
//!   of the wrong type PARAM_ERROR TYPE_MISMATCH (and is not applied), at once, no text.
//! * Commands: COMMAND_INT must use frame 5 (else 9); DO_REPOSITION is COMMAND_INT only
//!   (COMMAND_LONG: 8) and param2 must be 1 (else 3), and a target outside the geofence is
//!   acked but not flown ("Reposition is outside geofence"); unknown commands: 3.
//! * Ground truth (SIH): HIL_STATE_QUATERNION is not streamed until SET_MESSAGE_INTERVAL asks
//!   for it (ACCEPTED, then at the asked interval); AUTOPILOT_VERSION identifies PX4 SITL as
//!   `send_autopilot_capabilities` fills it there (USB ids 0, board_version 1, `uid` from the
//!   SITL board's "SIMULATIONID0000", no GUID; see `nexus_core::ground_truth`).
//!
//! # Calibrated to the measurements
//! First heartbeat 1.24 s, global position 3.0 s, armable 4.08 s (Mission mode 6.11 s), STANDBY
//! from 4.08 s in every mode, as the traces' time_boot_ms (`fixtures/calibration/px4-boot.tsv`);
//! takeoff detected ~1.9 s after
//! arming (1 s spool-up, then the thrust); 15 m reposition in ~7 s (PX4: ~6.5); "Disarmed by
//! landing" 2.0–2.4 s after ON_GROUND; "Failsafe activated" ~1.3 s after the offboard stream
//! stops; mission retries ~0.26 s apart; home's altitude re-estimated every 2 s for 120 s
//! after takeoff, between 0.6 m below and 1.25 m above the pad, often by ≥ 1 m at once, so
//! relative_alt reads 3.75–5.6 m in a 5 m hover as on PX4 (switch:
//! [`VehicleConfig::relative_alt_steps`]); GLOBAL_POSITION_INT.alt lags the truth by 0.25 s of
//! the vertical speed, at most 0.7 m (EKF2's lag in the climb).
//!
//! # Against the real PX4 traces
//! `scripts/trace-phases` extracts PX4's numbers from the PX4 recordings (`fixtures/px4-traces/`)
//! into `fixtures/calibration/` (phases per flight, stream rates); `tests/tests/sim_calibration.rs`
//! and `tests::rates` compare. Ratios sim/PX4 at the last calibration:
//!
//! | | status | sim vs PX4 |
//! | --- | --- | --- |
//! | arm → "Takeoff detected" | modelled (from the thrust, 0.95 s after spool-up, still on the ground) | 1.95 vs 1.94–2.01 s (0.97–1.01) |
//! | takeoff climb | approximated: lift-off 4.6 s after arming, MPC_TKO_SPEED over MPC_TKO_RAMP_T | arm → 4.5 m held 2 s: 11.5 vs 11.3 s (1.02) |
//! | Mission auto-climb | modelled ("Climb to … above home", takeoff item) | arm → item 1: 9.1 vs 8.1 s (1.12) |
//! | mission legs (15–19 m, 90° turns) | approximated: jerk limit as 0.35·MPC_ACC_HOR, braking at MPC_ACC_HOR/3, no speed until the heading is within ~30° (MPC_YAWRAUTO_MAX 60) | 5.5 / 7.6 / 6.3 / 7.2 vs 5.6 / 8.5 / 7.1 / 7.1 s (0.89–1.03) |
//! | landing from 10 m (Mission) / 5 m (Land) | approximated: MPC_LAND_SPEED below MPC_LAND_ALT2, "Landing detected" 6 s after touchdown (1.48 s if it never left the ground, as wait-for-text-with-reaction-x4) | 18.2 vs 18.2 s (1.00); 13.3 vs 13.5 s (0.99) |
//! | disarm after landing | modelled: COM_DISARM_LAND after Land; at once when a mission ends landed | 2.25 vs 2.0–2.4 s; 0.0 vs 0.1 s |
//! | totals (from the first heartbeat, as nexus counts) | | box 65.2 vs 66.3 s (0.98); takeoff-hover-land 46.2 vs 45.1 s derived (1.02); wait-for-text 17.8 vs 17.9 s (0.99), its landing 1.61 vs 1.60 s |
//! | streams on the offboard link | modelled: PX4's set and rates (31 messages, each ±20 %) | |
//! | TIMESYNC, GET_MESSAGE_INTERVAL, FLIGHT_INFORMATION (the message and an ACCEPTED ack: commander's arming and takeoff times, zeroed at disarm, COM_FLIGHT_UUID), reboot/shutdown, PARAM_ERROR, download frame 6 (fence items 5, autocontinue off) | modelled | |
//! | RTL_RETURN_ALT 30, RTL_DESCEND_ALT 10, MPC_YAWRAUTO_MAX 60 | modelled (PX4's multicopter defaults) | |
//! | Position-mode sticks | approximated: MPC_XY_MAN_EXPO 0.6 up to 10 m/s, gaining speed at expo(stick)·MPC_ACC_HOR/2 | pitch 0.5 for 4 s: ~3.3 vs 3.2–3.5 m |
//! | "Using default takeoff altitude: N m" | modelled: at arming in Takeoff without a NAV_TAKEOFF altitude | |
//! | boot → armable | modelled: first heartbeat 1.24 s, GPS_GLOBAL_ORIGIN with it, SYS_STATUS prearm bit from 4.08 s (Hold, Takeoff, …) or 6.11 s (Mission mode), STANDBY from 4.08 s in every mode; boot text "Preflight Fail: heading estimate not stable" (CRITICAL) | seen at 1.24 / 4.25 / 6.25 / 4.24 s vs PX4 1.24–1.25 / 4.07–4.08 / 6.11 / 4.26–4.28 s (the sim's 5 Hz SYS_STATUS samples later); not modelled: HOME_POSITION from 2.27 s (here with the global position, 3.0 s vs 2.69–3.18 s) |
//! | parameters | modelled: exactly the 897 PX4 SITL lists for this airframe, with its types and values (`data/sih-quadx.tsv`, [`params::TABLE`]; MAV_SYS_ID and UXRCE_DDS_KEY the instance + 1), `_HASH_CHECK` ahead of the list (set: read-only, stops the list); list, read by name/index, set by type | PARAM_REQUEST_LIST = PX4's list (`tests::protocol`, `sim_params`); the checksum is this vehicle's (PX4 leaves its volatile parameters out) |
//! | events protocol ([`events`]) | modelled: CURRENT_EVENT_SEQUENCE every 3 s (reset flag as PX4), REQUEST_EVENT from a 20-event buffer, RESPONSE_EVENT_ERROR; EVENTs with PX4's ids for armed/disarmed by (with PX4's reason code), takeoff/landing detected, "Executing Mission" (now also as text), "Mission finished, landed", arming denied (throttle above center) | not modelled: PX4's boot-time health and arming-check reports (arming_check_summary, health_summary, the per-check events), failsafe, mode-change and navigator events other than the above |
//! | geofence, rally points, RTL destination ([`geofence`], [`rtl`]) | modelled: PX4's area logic (every area must pass; areas not containing home dropped with PX4's text), GF_MAX_HOR/VER_DIST, mission feasibility against the fence ("Geofence violation for waypoint N"), DO_REPOSITION outside refused after the ACCEPTED ack ("Reposition is outside geofence"), a breach's failsafe on its onset with PX4's texts (GF_ACTION 0–5; Return and Land after COM_FAIL_ACT_T's Hold; terminate: motors off), RTL to the closest of home and the rally points (RTL_TYPE 0, 1, 5), "RTL: unsupported MAV_FRAME" every 2 s for rally points in other frames than 0/3 | not modelled: GF_PREDICT (0 on PX4 SITL), GF_SOURCE, the fence's altitude band, RTL_TYPE 2/3/4 (mission-based: the sim returns as 0), the Hold position wandering across the fence line (PX4 can re-trigger the failsafe there) |
//! | battery, data link, failure injection ([`battery`]) | modelled: PX4 SITL's simulated battery (drains armed over SIM_BAT_DRAIN 60 s down to SIM_BAT_MIN_PCT 50 %, full when disarmed; BAT1_V_EMPTY..V_CHARGED × 4 cells, PX4's 1 s cell-voltage filter) in SYS_STATUS / BATTERY_STATUS; BAT_LOW/CRIT/EMERGEN_THR warnings with PX4's texts and COM_LOW_BAT_ACT (3: Return at critical, Land at emergency, after COM_FAIL_ACT_T's hold); an emergency on the pad hangs commander until a power-off 60 s later; data-link loss after COM_DL_LOSS_T (texts; NAV_DLL_ACT 1/2/3/5/6, COM_DLL_EXCEPT, cleared when the link is back; from PX4's source: on PX4 SITL 40 s of silence on the offboard link gave no reaction, not understood yet); MAV_CMD_INJECT_FAILURE: DENIED without SYS_FAILURE_EN, battery (unit 100) ok/off ACCEPTED, every other unit (GPS 4, RC 104, …) no COMMAND_ACK; offboard loss (COM_OF_LOSS_T, COM_OBL_RC_ACT), manual control loss | not modelled: the battery's current and time-remaining estimates, the RTL-time-versus-battery check (COM_FLTT_LOW_ACT), injected failures of other units (no effect, as no ack), the stale SYS_STATUS health a hung commander leaves (the prearm bit goes off here) |
//! | standard modes ([`modes`]) | modelled: AVAILABLE_MODES on REQUEST_MESSAGE (16 modes, PX4's names, standard modes, properties), CURRENT_MODE with standard_mode (0.5 Hz and on request) | PX4 main also lists Altitude Cruise, Guided Course, Descend, Termination; AVAILABLE_MODES_MONITOR never sent (the set never changes; PX4 sent none in the traces) |
//! | GPS_GLOBAL_ORIGIN | modelled: once after the first heartbeat (PX4: 1.27 s), on request | |
//! | stream contents (ESTIMATOR_STATUS, VIBRATION, OPEN_DRONE_ID_*, …) | approximated: present at PX4's rate, fields mostly zero | |
//!
//! Modules, one per concept: [`geo`], [`params`], [`dynamics`], [`commander`], [`navigator`],
//! [`geofence`], [`rtl`],
//! [`mission`], [`statustext`], [`streams`], [`events`], [`modes`], [`faults`], [`clock`],
//! [`server`]; `nexus sim` (the command line around [`SimHandle`]) is in the nexus-cli package.
//!
//! The vehicle alone, in memory: step its clock and it boots and talks, as PX4 SITL does
//! (`sim/examples/standalone.rs` flies it with a nexus-core client).
//!
//! ```
//! use nexus_sim::{Vehicle, VehicleConfig};
//!
//! let mut vehicle = Vehicle::new(VehicleConfig::instance(0));
//! vehicle.step(2_000_000); // 2 s of sim time: past the first heartbeat (1.5 s)
//! assert!(vehicle.mavlink_is_up());
//! let mut datagram = [0u8; 2048];
//! let n = vehicle.poll_transmit(&mut datagram).expect("it has spoken");
//! assert!(n > 0 && vehicle.frames_total() > 0);
//! assert_eq!(vehicle.true_height_m(), 0.0); // on the pad
//! ```

pub mod battery;
pub mod clock;
pub mod commander;
mod commands;
pub mod config;
pub mod dynamics;
pub mod events;
pub mod faults;
pub mod fixed_wing;
pub mod geo;
pub mod geofence;
mod handlers;
pub mod io;
pub mod logger;
pub mod mission;
pub mod modes;
pub mod navigator;
pub mod params;
pub mod rtl;
pub mod server;
pub mod signing;
pub mod statustext;
pub mod streams;
pub mod ulog;
mod vehicle;
pub mod vehicle_type;
pub mod wire;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod testutil;

pub use clock::ClockMode;
pub use config::{BootTimings, VehicleConfig};
pub use faults::{ExitStatus, Fault};
pub use geo::GeoPoint;
pub use server::{OffboardLink, Ports, SimConfig, SimError, SimHandle};
pub use vehicle::{Vehicle, VehicleSnapshot};
pub use vehicle_type::VehicleType;
