//! A bridge leaves nothing behind: after `stop` or a drop its thread is gone and its ports are
//! free again. (A test binary of its own, so no other test's bridge thread is counted.)

use std::net::{TcpListener, UdpSocket};
use std::time::Duration;

use nexus_host::bridge::{bridge, Bridge, BridgeOptions};

/// Threads of this process named like the bridge's.
fn bridge_threads() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0; // not Linux: the port checks below still run
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "nexus-bridge")
        .count()
}

fn start() -> (Bridge, u16, u16) {
    let b = bridge(
        &"tcpin:127.0.0.1:0".parse().unwrap(),
        &"udpin:127.0.0.1:0".parse().unwrap(),
        BridgeOptions {
            stream_baud: Some(115_200),
            ..BridgeOptions::default()
        },
    )
    .expect("start");
    let tcp = b.from_local_addr().unwrap().port();
    let udp = b.to_local_addr().unwrap().port();
    (b, tcp, udp)
}

#[test]
fn stop_and_drop_join_the_thread_and_free_both_ports() {
    for round in 0..3 {
        let (b, tcp, udp) = start();
        assert!(b.is_running());
        // The thread names itself as it starts: give it a moment.
        for _ in 0..100 {
            if bridge_threads() == 1 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if cfg!(target_os = "linux") {
            assert_eq!(bridge_threads(), 1, "round {round}");
        }
        // A peer connects and goes away: no reason to stop.
        drop(std::net::TcpStream::connect(("127.0.0.1", tcp)).unwrap());
        std::thread::sleep(Duration::from_millis(50));
        assert!(b.is_running());
        if round % 2 == 0 {
            let stats = b.stop().expect("a clean stop");
            assert_eq!(stats.forward.units_in, 0);
        } else {
            drop(b);
        }
        assert_eq!(bridge_threads(), 0, "round {round}: the thread is joined");
        // UDP binds without SO_REUSEADDR: this fails if the bridge's socket were still open.
        UdpSocket::bind(("127.0.0.1", udp)).expect("UDP port free again");
        TcpListener::bind(("127.0.0.1", tcp)).expect("TCP port free again");
    }
}
