//! Keep the witness facts' topics of a ULog, at most 10 Hz each, as a small ULog (how
//! `fixtures/px4-ulog/` was made from PX4's full log):
//!
//! `cargo run -p nexus-host --example ulog_subset -- PX4.ulg OUT.ulg [--plots]`
//!
//! `--plots` also keeps what the HTML report draws from the log (ground-truth height, the
//! position setpoint, the battery).

use nexus_host::ulog::{FieldType, Topic, Ulog, UlogWriter, WriteValue};

/// (topic, fields kept) with the types written.
const KEEP: &[(&str, &[(FieldType, &str)])] = &[
    (
        "vehicle_status",
        &[
            (FieldType::U8, "arming_state"),
            (FieldType::U8, "nav_state"),
            (FieldType::Bool, "failsafe"),
        ],
    ),
    ("vehicle_land_detected", &[(FieldType::Bool, "landed")]),
    (
        "vehicle_local_position",
        &[
            (FieldType::F32, "x"),
            (FieldType::F32, "y"),
            (FieldType::F32, "z"),
        ],
    ),
    (
        "mission_result",
        &[
            (FieldType::I32, "seq_reached"),
            (FieldType::U16, "seq_current"),
            (FieldType::Bool, "finished"),
        ],
    ),
];

/// With `--plots`, also what the HTML report draws from PX4's log beyond the link.
const PLOTS: &[(&str, &[(FieldType, &str)])] = &[
    (
        "vehicle_local_position_groundtruth",
        &[(FieldType::F32, "z")],
    ),
    (
        "vehicle_local_position_setpoint",
        &[
            (FieldType::F32, "x"),
            (FieldType::F32, "y"),
            (FieldType::F32, "z"),
        ],
    ),
    (
        "battery_status",
        &[(FieldType::F32, "voltage_v"), (FieldType::F32, "remaining")],
    ),
];

fn value(t: FieldType, v: f64) -> WriteValue {
    match t {
        FieldType::U8 => WriteValue::U8(v as u8),
        FieldType::I32 => WriteValue::I32(v as i32),
        FieldType::U16 => WriteValue::U16(v as u16),
        FieldType::U64 => WriteValue::U64(v as u64),
        FieldType::F32 => WriteValue::F32(v as f32),
        FieldType::F64 => WriteValue::F64(v),
        FieldType::Bool => WriteValue::Bool(v != 0.0),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (from, to, plots) = match args.as_slice() {
        [_, from, to] => (from, to, false),
        [_, from, to, flag] if flag == "--plots" => (from, to, true),
        _ => return Err("usage: ulog_subset PX4.ulg OUT.ulg [--plots]".into()),
    };
    let keep: Vec<&(&str, &[(FieldType, &str)])> = if plots {
        KEEP.iter().chain(PLOTS).collect()
    } else {
        KEEP.iter().collect()
    };
    let log = Ulog::open(from)?;
    let mut w = UlogWriter::new(std::fs::File::create(to)?, log.start_us)?;
    for key in ["sys_name", "ver_sw", "ver_hw"] {
        if let Some(v) = log.info(key) {
            w.info(key, v)?;
        }
    }
    let mut ids = Vec::new();
    for (name, fields) in &keep {
        ids.push(w.format(Topic::new(name, fields))?);
    }
    let ids: Vec<u16> = ids
        .into_iter()
        .map(|i| w.subscribe(i))
        .collect::<Result<_, _>>()?;
    // Every kept sample, time-ordered: a change of a state is kept, else one per 100 ms.
    let mut rows: Vec<(u64, u16, Vec<WriteValue>)> = Vec::new();
    for ((name, fields), id) in keep.iter().zip(&ids) {
        let series: Vec<Vec<(u64, f64)>> =
            fields.iter().map(|(_, f)| log.series(name, f)).collect();
        let n = series.iter().map(Vec::len).min().unwrap_or(0);
        let mut last: Option<(u64, Vec<f64>)> = None;
        for i in 0..n {
            let t = series[0][i].0;
            let vals: Vec<f64> = series.iter().map(|s| s[i].1).collect();
            let kept = match &last {
                None => true,
                // A position changes every sample: only its rate is cut.
                Some((lt, lv)) => {
                    t >= lt + 100_000
                        || (!name.starts_with("vehicle_local_position") && *lv != vals)
                }
            };
            if kept {
                let v = fields
                    .iter()
                    .zip(&vals)
                    .map(|((ty, _), v)| value(*ty, *v))
                    .collect();
                rows.push((t, *id, v));
                last = Some((t, vals));
            }
        }
    }
    rows.sort_by_key(|r| r.0);
    for (t, id, v) in rows {
        w.data(id, t, &v)?;
    }
    w.into_inner()?;
    Ok(())
}
