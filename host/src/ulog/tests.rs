use super::facts::Facts;
use super::*;
use nexus_sim::ulog::{FlightLog, FlightSample};

fn sample(now_us: u64, armed: bool, landed: bool, z: f32, nav_state: u8) -> FlightSample {
    FlightSample {
        now_us,
        armed,
        nav_state,
        failsafe: false,
        armed_time_us: 0,
        takeoff_time_us: 0,
        landed,
        vehicle_type: 1,
        system_type: 2,
        ned_m: [1.0, 2.0, z],
        vel_ned_m_s: [0.0; 3],
        yaw_rad: 0.5,
        origin: (47.0, 8.0, 400.0),
        global: (47.0, 8.0, 400.0 - z),
        position_valid: true,
        mission: (1, 0, 3, true, now_us >= 9_000_000),
        battery: (16.0, 0.9, 0),
    }
}

/// A flight: disarmed 0–2 s, armed 2–10 s (in the air 3–8 s, 10 m up), Mission then Hold.
fn flight_log() -> Vec<u8> {
    let mut log = FlightLog::new(Vec::new(), 0, "test").unwrap();
    for i in 0..120u64 {
        let t = i * 100_000;
        let armed = (2_000_000..10_000_000).contains(&t);
        let air = (3_000_000..8_000_000).contains(&t);
        let z = if air { -10.0 } else { 0.0 };
        let nav = if t < 9_000_000 { 3 } else { 4 };
        log.sample(&sample(t, armed, !air, z, nav)).unwrap();
    }
    log.console(1, "INFO  [commander] Armed by external command")
        .unwrap();
    log.into_inner().unwrap()
}

#[test]
fn the_built_in_vehicle_log_reads_back() {
    let log = Ulog::parse(flight_log()).unwrap();
    assert_eq!(log.version, 1);
    assert_eq!(log.info("sys_name"), Some("test"));
    assert_eq!(log.damaged, 0);
    assert_eq!(log.truncated_at, None);
    for t in [
        "vehicle_status",
        "vehicle_land_detected",
        "vehicle_local_position",
        "vehicle_global_position",
        "mission_result",
        "battery_status",
    ] {
        assert_eq!(log.samples(t, 0), 120, "{t}");
    }
    let z = log.series("vehicle_local_position", "z");
    assert_eq!(z[35], (3_500_000, -10.0));
    assert_eq!(log.logged.len(), 1);
    assert!(log.logged[0].text.contains("Armed by external command"));

    let f = Facts::of(&log);
    assert_eq!(f.arms, vec![2_000_000]);
    assert_eq!(f.disarms, vec![10_000_000]);
    assert_eq!(f.landings(), vec![8_000_000]);
    assert_eq!(f.takeoffs(), vec![3_000_000]);
    assert_eq!(f.max_height_m, Some((10.0, 3_000_000)));
    assert_eq!(
        f.modes,
        vec![
            (0, nexus_core::Mode::Mission),
            (9_000_000, nexus_core::Mode::Hold)
        ]
    );
    assert_eq!(f.mission_finished_us, Some(9_000_000));
    assert_eq!(f.span_us, Some((0, 11_900_000)));
    assert!(f.missing_topics.is_empty());
    assert!(!f.had_failsafe());
}

#[test]
fn a_truncated_log_yields_what_it_has() {
    let bytes = flight_log();
    let full = Ulog::parse(bytes.clone()).unwrap();
    let half = Ulog::parse(bytes[..bytes.len() / 2].to_vec()).unwrap();
    assert!(half.truncated_at.is_some());
    let n = half.samples("vehicle_status", 0);
    assert!(n > 10 && n < 120, "{n}");
    // What it has is what the full log says over the same time.
    let f = Facts::of(&half);
    assert_eq!(f.arms, Facts::of(&full).arms);
}

#[test]
fn not_a_ulog_is_a_typed_error() {
    assert!(matches!(
        Ulog::parse(b"hello".to_vec()),
        Err(UlogError::NotUlog)
    ));
    assert!(matches!(
        Ulog::parse(vec![0u8; 64]),
        Err(UlogError::NotUlog)
    ));
    // An incompatible flag this reader does not know stops it.
    let mut b = flight_log();
    b[16 + 3 + 8] = 0b10;
    assert!(matches!(Ulog::parse(b), Err(UlogError::Incompatible(2))));
}

#[test]
fn damaged_messages_are_counted_and_skipped() {
    let mut b = flight_log();
    // Find the first data message and point it at a msg_id nobody subscribed.
    let mut at = 16;
    loop {
        let size = u16::from_le_bytes([b[at], b[at + 1]]) as usize;
        if b[at + 2] == b'D' {
            b[at + 3] = 0xee;
            b[at + 4] = 0xee;
            break;
        }
        at += 3 + size;
    }
    let log = Ulog::parse(b).unwrap();
    assert_eq!(log.damaged, 1);
    assert_eq!(log.samples("vehicle_status", 0), 119);
}

#[test]
fn padding_left_out_of_a_data_message_still_reads() {
    let mut w = UlogWriter::new(Vec::new(), 0).unwrap();
    let t = w
        .format(Topic::new(
            "vehicle_land_detected",
            &[(FieldType::Bool, "landed"), (FieldType::U8, "_padding0")],
        ))
        .unwrap();
    let id = w.subscribe(t).unwrap();
    w.data(id, 5, &[WriteValue::Bool(true), WriteValue::U8(0)])
        .unwrap();
    let mut b = w.into_inner().unwrap();
    // Drop the padding byte: message size − 1, last byte gone.
    let n = b.len();
    let msg_at = n - (3 + 2 + 8 + 2);
    let size = u16::from_le_bytes([b[msg_at], b[msg_at + 1]]) - 1;
    b[msg_at..msg_at + 2].copy_from_slice(&size.to_le_bytes());
    b.pop();
    let log = Ulog::parse(b).unwrap();
    assert_eq!(
        log.series("vehicle_land_detected", "landed"),
        vec![(5, 1.0)]
    );
}

#[test]
fn nested_types_and_arrays_are_skipped_by_size() {
    let mut b = Vec::new();
    b.extend_from_slice(&MAGIC);
    b.push(1);
    b.extend_from_slice(&0u64.to_le_bytes());
    let mut msg = |kind: u8, body: &[u8]| {
        b.extend_from_slice(&(body.len() as u16).to_le_bytes());
        b.push(kind);
        b.extend_from_slice(body);
    };
    msg(b'F', b"inner:uint16_t a;float[2] b;");
    msg(
        b'F',
        b"outer:uint64_t timestamp;inner[2] i;float[3] v;uint8_t k;",
    );
    let mut a = vec![0u8];
    a.extend_from_slice(&3u16.to_le_bytes());
    a.extend_from_slice(b"outer");
    msg(b'A', &a);
    let mut d = 3u16.to_le_bytes().to_vec();
    d.extend_from_slice(&42u64.to_le_bytes());
    d.extend_from_slice(&[0u8; 20]); // inner[2]: 2 × (2 + 8)
    for v in [1.0f32, 2.0, 3.0] {
        d.extend_from_slice(&v.to_le_bytes());
    }
    d.push(7);
    msg(b'D', &d);
    let log = Ulog::parse(b).unwrap();
    assert_eq!(log.series("outer", "v[2]"), vec![(42, 3.0)]);
    assert_eq!(log.series("outer", "k"), vec![(42, 7.0)]);
    assert!(log.series("outer", "v[3]").is_empty());
    assert!(log.series("outer", "i").is_empty());
}

#[test]
fn a_nesting_loop_does_not_hang() {
    let mut b = Vec::new();
    b.extend_from_slice(&MAGIC);
    b.push(1);
    b.extend_from_slice(&0u64.to_le_bytes());
    for f in [
        &b"a:b x;"[..],
        b"b:a y;",
        b"t:uint64_t timestamp;a z;uint8_t k;",
    ] {
        b.extend_from_slice(&(f.len() as u16).to_le_bytes());
        b.push(b'F');
        b.extend_from_slice(f);
    }
    let log = Ulog::parse(b).unwrap();
    assert!(log.field("t", "k").is_none());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// Any bytes after a valid header, and any corruption of a real log: never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2048),
                                   flips in proptest::collection::vec((0usize..100_000, proptest::prelude::any::<u8>()), 0..16)) {
        let mut b = MAGIC.to_vec();
        b.push(1);
        b.extend_from_slice(&[0u8; 8]);
        b.extend_from_slice(&tail);
        if let Ok(log) = Ulog::parse(b) {
            let _ = Facts::of(&log);
        }
        let mut real = flight_log();
        let n = real.len();
        for (at, v) in flips {
            real[16 + at % (n - 16)] = v;
        }
        if let Ok(log) = Ulog::parse(real) {
            let _ = Facts::of(&log);
        }
    }
}
