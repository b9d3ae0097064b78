//! Every failed wait explained through a [`Session`]: `Session::wait_explained` gives, with the
//! result, what was pending and why it did not happen, in PX4's words where it gave any. On a
//! lockstep run of the simulated PX4.
//!
//! SITL instance: 229 (of the 224–231 reserved for the mission-truth and explanation tests).

mod host_support;

use host_support::*;
use nexus_core::engine::{Condition, Op, Reason, Wait};
use nexus_core::Mode;
use nexus_host::groups::ActionApi;

#[test]
fn failed_waits_say_why_and_met_ones_say_nothing() {
    let s = session(lockstep(229));
    let op = s.client();
    // Met: nothing to explain.
    let (r, why) = s
        .wait_explained(&Wait::disarmed().timeout_s(5.0), CAP)
        .unwrap();
    assert_eq!(r.reason, Reason::Met);
    assert_eq!(why, None);
    // A guard, named by its condition and what it read.
    let (r, why) = s
        .wait_explained(
            &Wait::time_s(5.0)
                .guard(Condition::altitude_m(3.0).op(Op::Le))
                .timeout_s(10.0),
            CAP,
        )
        .unwrap();
    assert_eq!(r.reason, Reason::Guard);
    let why = why.unwrap();
    assert!(
        why.starts_with("guard `altitude <= 3 m` fired at "),
        "{why}"
    );
    // Mission mode without a mission: PX4 never becomes armable, so the arm is never sent.
    op.set_mode(Mode::Mission).unwrap();
    op.arm().unwrap();
    let (r, why) = s
        .wait_explained(&Wait::armed().timeout_s(20.0), CAP)
        .unwrap();
    assert_eq!(r.reason, Reason::Timeout);
    let why = why.unwrap();
    assert!(
        why.starts_with(
            "arm not sent: PX4 not armable for 20 s in Mission mode, with no mission uploaded \
             on this link (system_status UNINIT"
        ),
        "{why}"
    );
    // The plain wait still gives the same result.
    let r = s.wait(&Wait::armed().timeout_s(2.0), CAP).unwrap();
    assert_eq!(r.reason, Reason::Timeout);
}
