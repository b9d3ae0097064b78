//! pymavlink-style connection strings, parsed into a typed [`ConnString`].
//!
//! | string | meaning |
//! | --- | --- |
//! | `udpin:HOST:PORT` | bind `HOST:PORT`, take one peer by the link's `PeerRule` and reply to it |
//! | `udpout:HOST:PORT` | send to `HOST:PORT` from an ephemeral port; replies come back to it |
//! | `tcp:HOST:PORT` | connect to a TCP server |
//! | `tcpin:HOST:PORT` | listen on `HOST:PORT`, accept MAVLink peers (the latest one wins) |
//! | `serial:PATH:BAUD` | a serial device at `BAUD` bits/s, 8N1, no flow control |
//!
//! An IPv6 host goes in brackets (`udpin:[::]:14540`). A serial path may itself contain colons
//! (`/dev/serial/by-path/pci-0000:00:14.0-usb-0:2:1.0-port0`): the baud is whatever follows the
//! last one. Parsing never touches the network; names are resolved when the link opens.
//!
//! The spellings users bring from pymavlink and MAVSDK are read as the same links (and display
//! in the canonical form above):
//!
//! | string | read as |
//! | --- | --- |
//! | `udp:HOST:PORT` (pymavlink: listen) | `udpin:HOST:PORT` |
//! | `udp://HOST:PORT`, `udpin://HOST:PORT`, `udp://:PORT` (MAVSDK; no host: every interface) | `udpin:HOST:PORT`, `udpin:0.0.0.0:PORT` |
//! | `udpout://HOST:PORT` (MAVSDK) | `udpout:HOST:PORT` |
//! | `tcpout:HOST:PORT`, `tcp://HOST:PORT`, `tcpout://HOST:PORT` | `tcp:HOST:PORT` |
//! | `tcpin://HOST:PORT`, `tcpin://:PORT` | `tcpin:HOST:PORT` |
//! | `serial:///dev/ttyACM0:57600`, `serial:///dev/ttyACM0` (MAVSDK; default 57600) | `serial:/dev/ttyACM0:57600` |

use std::fmt;
use std::str::FromStr;

/// Where a MAVLink link goes: the parsed form of a pymavlink connection string.
///
/// `Display` writes the canonical string back, so `s.parse::<ConnString>()?.to_string()`
/// round-trips (scheme in lower case, IPv6 hosts in brackets).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive] // more variants may come; match with a `_` arm
pub enum ConnString {
    /// Bind `host:port` and reply to the most recent sender (`udpin:`). Port 0 lets the OS pick.
    UdpIn {
        /// Address or name to bind, e.g. `0.0.0.0`.
        host: String,
        /// UDP port to bind.
        port: u16,
    },
    /// Send to `host:port` from an ephemeral local port and read replies on it (`udpout:`).
    UdpOut {
        /// Destination address or name.
        host: String,
        /// Destination UDP port (never 0).
        port: u16,
    },
    /// Connect to a TCP server (`tcp:`).
    Tcp {
        /// Server address or name.
        host: String,
        /// Server TCP port (never 0).
        port: u16,
    },
    /// Listen for TCP peers (`tcpin:`); a new connection replaces the current one.
    TcpIn {
        /// Address or name to listen on.
        host: String,
        /// TCP port to listen on. Port 0 lets the OS pick.
        port: u16,
    },
    /// A serial device (`serial:`), 8 data bits, no parity, 1 stop bit, no flow control.
    Serial {
        /// Device path, e.g. `/dev/ttyUSB0`.
        path: String,
        /// Line rate in bits per second.
        baud: u32,
    },
}

/// The baud MAVSDK assumes for a `serial://PATH` without one.
pub const MAVSDK_DEFAULT_BAUD: u32 = 57_600;

/// The schemes [`ConnString`] understands, as they are spelled in a connection string.
pub const SCHEMES: [&str; 5] = ["udpin", "udpout", "tcp", "tcpin", "serial"];

impl ConnString {
    /// The scheme as written in the string (`"udpin"`, …).
    pub fn scheme(&self) -> &'static str {
        match self {
            ConnString::UdpIn { .. } => "udpin",
            ConnString::UdpOut { .. } => "udpout",
            ConnString::Tcp { .. } => "tcp",
            ConnString::TcpIn { .. } => "tcpin",
            ConnString::Serial { .. } => "serial",
        }
    }

    /// `udpin:0.0.0.0:PORT`, what a client of PX4's offboard link listens on.
    pub fn udp_in_any(port: u16) -> Self {
        ConnString::UdpIn {
            host: "0.0.0.0".into(),
            port,
        }
    }
}

impl fmt::Display for ConnString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnString::UdpIn { host, port }
            | ConnString::UdpOut { host, port }
            | ConnString::Tcp { host, port }
            | ConnString::TcpIn { host, port } => {
                if host.contains(':') {
                    write!(f, "{}:[{host}]:{port}", self.scheme())
                } else {
                    write!(f, "{}:{host}:{port}", self.scheme())
                }
            }
            ConnString::Serial { path, baud } => write!(f, "serial:{path}:{baud}"),
        }
    }
}

/// What is wrong with a connection string; see [`ConnStringError`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive] // more variants may come; match with a `_` arm
pub enum Problem {
    /// Nothing but whitespace.
    Empty,
    /// No `scheme:` prefix at all.
    MissingScheme,
    /// A scheme this crate does not speak (the scheme as written).
    UnknownScheme(String),
    /// `scheme:` with nothing after it.
    MissingAddress,
    /// `HOST:PORT` without the host.
    MissingHost,
    /// `HOST` without `:PORT`.
    MissingPort,
    /// The port is not a decimal number (the text as written).
    PortNotNumber(String),
    /// The port is a number above 65535 (the text as written).
    PortOutOfRange(String),
    /// Port 0 where a destination is needed (`udpout`, `tcp`).
    ZeroPort,
    /// An IPv6 address without brackets, which makes the port ambiguous.
    UnbracketedIpv6,
    /// `[` without a matching `]`, or text between `]` and `:PORT`.
    BadBrackets,
    /// The host contains whitespace or a `/`.
    BadHost(String),
    /// `serial:` without a device path.
    MissingPath,
    /// `serial:PATH` without `:BAUD`.
    MissingBaud,
    /// The baud is not a decimal number (the text as written).
    BaudNotNumber(String),
    /// Baud 0 or above `u32::MAX`.
    BaudOutOfRange(String),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Empty => f.write_str("empty connection string (expected e.g. udpin:0.0.0.0:14540)"),
            Problem::MissingScheme => f.write_str(
                "no scheme (expected udpin:HOST:PORT, udpout:HOST:PORT, tcp:HOST:PORT, tcpin:HOST:PORT or serial:PATH:BAUD)",
            ),
            Problem::UnknownScheme(s) => {
                write!(f, "unknown scheme '{s}' (expected udpin, udpout, tcp, tcpin, serial)")
            }
            Problem::MissingAddress => f.write_str("missing HOST:PORT"),
            Problem::MissingHost => f.write_str("missing host"),
            Problem::MissingPort => f.write_str("missing port"),
            Problem::PortNotNumber(p) => write!(f, "port must be a number (got '{p}')"),
            Problem::PortOutOfRange(p) => write!(f, "port {p} is out of range (0-65535)"),
            Problem::ZeroPort => f.write_str(
                "port 0 is not a destination (only udpin and tcpin may bind port 0 to let the OS pick)",
            ),
            Problem::UnbracketedIpv6 => {
                f.write_str("an IPv6 host must be in brackets, e.g. udpin:[::]:14540")
            }
            Problem::BadBrackets => {
                f.write_str("malformed [IPv6] host (expected [ADDRESS]:PORT)")
            }
            Problem::BadHost(h) => write!(f, "invalid host '{h}'"),
            Problem::MissingPath => f.write_str("missing device path"),
            Problem::MissingBaud => f.write_str("missing baud (expected serial:PATH:BAUD)"),
            Problem::BaudNotNumber(b) => write!(f, "baud must be a number (got '{b}')"),
            Problem::BaudOutOfRange(b) => {
                write!(f, "baud {b} is out of range (1-{})", u32::MAX)
            }
        }
    }
}

/// A connection string that could not be parsed: the input and exactly what is wrong with it.
///
/// Displays as `"<input> — <problem>"`, e.g. `udpin:0.0.0.0 — missing port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnStringError {
    input: String,
    problem: Problem,
}

impl ConnStringError {
    /// The string as given.
    pub fn input(&self) -> &str {
        &self.input
    }

    /// What is wrong with it.
    pub fn problem(&self) -> &Problem {
        &self.problem
    }
}

impl fmt::Display for ConnStringError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.problem == Problem::Empty {
            write!(f, "{}", self.problem)
        } else {
            write!(f, "{} — {}", self.input, self.problem)
        }
    }
}

impl std::error::Error for ConnStringError {}

impl FromStr for ConnString {
    type Err = ConnStringError;

    fn from_str(s: &str) -> Result<Self, ConnStringError> {
        let input = s.trim();
        parse(input).map_err(|problem| ConnStringError {
            input: input.to_string(),
            problem,
        })
    }
}

fn parse(s: &str) -> Result<ConnString, Problem> {
    if s.is_empty() {
        return Err(Problem::Empty);
    }
    let (scheme, rest) = s.split_once(':').ok_or(Problem::MissingScheme)?;
    let mut scheme_lc = scheme.to_ascii_lowercase();
    // MAVSDK's URL form: `scheme://…`; an empty host means every interface.
    let url = rest.strip_prefix("//");
    let owned;
    let rest = match url {
        Some(after) if scheme_lc == "serial" => {
            if !after.starts_with('/') {
                return Err(Problem::MissingPath);
            }
            // MAVSDK's serial URL may leave out the baud (its default is 57600).
            let has_baud = after
                .rsplit_once(':')
                .is_some_and(|(_, b)| !b.is_empty() && b.bytes().all(|c| c.is_ascii_digit()));
            owned = if has_baud {
                after.to_string()
            } else {
                format!("{after}:{MAVSDK_DEFAULT_BAUD}")
            };
            owned.as_str()
        }
        Some(after) => {
            owned = match after.strip_prefix(':') {
                Some(port) => format!("0.0.0.0:{port}"),
                None => after.to_string(),
            };
            owned.as_str()
        }
        None => rest,
    };
    // pymavlink's `udp:` listens; MAVSDK's `udp://` is its listening form too.
    match scheme_lc.as_str() {
        "udp" => scheme_lc = "udpin".into(),
        "tcpout" => scheme_lc = "tcp".into(),
        _ => {}
    }
    match scheme_lc.as_str() {
        "udpin" | "tcpin" => {
            let (host, port) = host_port(rest)?;
            Ok(if scheme_lc == "udpin" {
                ConnString::UdpIn { host, port }
            } else {
                ConnString::TcpIn { host, port }
            })
        }
        "udpout" | "tcp" => {
            let (host, port) = host_port(rest)?;
            if port == 0 {
                return Err(Problem::ZeroPort);
            }
            Ok(if scheme_lc == "udpout" {
                ConnString::UdpOut { host, port }
            } else {
                ConnString::Tcp { host, port }
            })
        }
        "serial" => serial(rest),
        "" => Err(Problem::MissingScheme),
        _ => Err(Problem::UnknownScheme(scheme.to_string())),
    }
}

fn host_port(rest: &str) -> Result<(String, u16), Problem> {
    if rest.is_empty() {
        return Err(Problem::MissingAddress);
    }
    let (host, port) = if let Some(after_bracket) = rest.strip_prefix('[') {
        let (host, tail) = after_bracket.split_once(']').ok_or(Problem::BadBrackets)?;
        if host.is_empty() {
            return Err(Problem::MissingHost);
        }
        match tail {
            "" => return Err(Problem::MissingPort),
            _ => (host, tail.strip_prefix(':').ok_or(Problem::BadBrackets)?),
        }
    } else {
        let Some((host, port)) = rest.rsplit_once(':') else {
            return Err(Problem::MissingPort);
        };
        if host.contains(':') {
            return Err(Problem::UnbracketedIpv6);
        }
        (host, port)
    };
    if host.is_empty() {
        return Err(Problem::MissingHost);
    }
    if host
        .chars()
        .any(|c| c.is_whitespace() || c == '/' || c == '[' || c == ']')
    {
        return Err(Problem::BadHost(host.to_string()));
    }
    Ok((host.to_string(), port_number(port)?))
}

fn port_number(p: &str) -> Result<u16, Problem> {
    if p.is_empty() {
        return Err(Problem::MissingPort);
    }
    if !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Problem::PortNotNumber(p.to_string()));
    }
    p.parse::<u16>()
        .map_err(|_| Problem::PortOutOfRange(p.to_string()))
}

fn serial(rest: &str) -> Result<ConnString, Problem> {
    if rest.is_empty() {
        return Err(Problem::MissingPath);
    }
    let Some((path, baud)) = rest.rsplit_once(':') else {
        return Err(Problem::MissingBaud);
    };
    if path.is_empty() {
        return Err(Problem::MissingPath);
    }
    if baud.is_empty() {
        return Err(Problem::MissingBaud);
    }
    if !baud.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Problem::BaudNotNumber(baud.to_string()));
    }
    match baud.parse::<u32>() {
        Ok(b) if b > 0 => Ok(ConnString::Serial {
            path: path.to_string(),
            baud: b,
        }),
        _ => Err(Problem::BaudOutOfRange(baud.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(s: &str) -> String {
        s.parse::<ConnString>().unwrap_err().to_string()
    }

    #[test]
    fn good_strings_parse_and_round_trip() {
        let cases = [
            ("udpin:0.0.0.0:14540", ConnString::udp_in_any(14540)),
            (
                "udpout:127.0.0.1:14580",
                ConnString::UdpOut {
                    host: "127.0.0.1".into(),
                    port: 14580,
                },
            ),
            (
                "tcp:localhost:5760",
                ConnString::Tcp {
                    host: "localhost".into(),
                    port: 5760,
                },
            ),
            (
                "tcpin:0.0.0.0:0",
                ConnString::TcpIn {
                    host: "0.0.0.0".into(),
                    port: 0,
                },
            ),
            (
                "udpin:[::]:14540",
                ConnString::UdpIn {
                    host: "::".into(),
                    port: 14540,
                },
            ),
            (
                "serial:/dev/ttyUSB0:57600",
                ConnString::Serial {
                    path: "/dev/ttyUSB0".into(),
                    baud: 57600,
                },
            ),
            (
                "serial:/dev/serial/by-path/pci-0000:00:14.0-usb-0:2:1.0-port0:921600",
                ConnString::Serial {
                    path: "/dev/serial/by-path/pci-0000:00:14.0-usb-0:2:1.0-port0".into(),
                    baud: 921600,
                },
            ),
        ];
        for (s, want) in cases {
            let got: ConnString = s.parse().unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(got, want, "{s}");
            assert_eq!(got.to_string(), s, "round trip of {s}");
            assert_eq!(got.to_string().parse::<ConnString>().unwrap(), got);
        }
    }

    #[test]
    fn pymavlink_and_mavsdk_spellings_parse_as_the_canonical_links() {
        let udp_in = |host: &str, port| ConnString::UdpIn {
            host: host.into(),
            port,
        };
        let serial = |path: &str, baud| ConnString::Serial {
            path: path.into(),
            baud,
        };
        let cases = [
            ("udp:0.0.0.0:14540", udp_in("0.0.0.0", 14540)),
            ("udp:127.0.0.1:14541", udp_in("127.0.0.1", 14541)),
            ("udp://:14540", udp_in("0.0.0.0", 14540)),
            ("udp://127.0.0.1:14542", udp_in("127.0.0.1", 14542)),
            ("udpin://0.0.0.0:14543", udp_in("0.0.0.0", 14543)),
            (
                "udpout://127.0.0.1:14580",
                ConnString::UdpOut {
                    host: "127.0.0.1".into(),
                    port: 14580,
                },
            ),
            (
                "tcp://localhost:5760",
                ConnString::Tcp {
                    host: "localhost".into(),
                    port: 5760,
                },
            ),
            (
                "tcpout:localhost:5761",
                ConnString::Tcp {
                    host: "localhost".into(),
                    port: 5761,
                },
            ),
            (
                "tcpin://:5762",
                ConnString::TcpIn {
                    host: "0.0.0.0".into(),
                    port: 5762,
                },
            ),
            ("serial:///dev/ttyACM0:57600", serial("/dev/ttyACM0", 57600)),
            (
                "serial:///dev/ttyUSB1",
                serial("/dev/ttyUSB1", MAVSDK_DEFAULT_BAUD),
            ),
            ("serial:/dev/pts/3:921600", serial("/dev/pts/3", 921600)),
        ];
        for (s, want) in cases {
            let got: ConnString = s.parse().unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(got, want, "{s}");
        }
        // The URL form keeps the canonical form's checks.
        assert!(matches!(
            "udpout://127.0.0.1:0"
                .parse::<ConnString>()
                .unwrap_err()
                .problem(),
            Problem::ZeroPort
        ));
        assert!(matches!(
            "udp://host".parse::<ConnString>().unwrap_err().problem(),
            Problem::MissingPort
        ));
        assert!(matches!(
            "serial://dev/ttyACM0:57600"
                .parse::<ConnString>()
                .unwrap_err()
                .problem(),
            Problem::MissingPath
        ));
    }

    #[test]
    fn scheme_is_case_insensitive_and_whitespace_trimmed() {
        let c: ConnString = "  UDPIN:0.0.0.0:14540\n".parse().unwrap();
        assert_eq!(c, ConnString::udp_in_any(14540));
        assert_eq!(c.to_string(), "udpin:0.0.0.0:14540");
    }

    #[test]
    fn bad_strings_say_exactly_what_is_wrong() {
        let cases = [
            ("", "empty connection string (expected e.g. udpin:0.0.0.0:14540)"),
            ("udpin:0.0.0.0", "udpin:0.0.0.0 — missing port"),
            ("udpin:0.0.0.0:", "udpin:0.0.0.0: — missing port"),
            ("udpin::14540", "udpin::14540 — missing host"),
            ("udpin:", "udpin: — missing HOST:PORT"),
            ("udpin:0.0.0.0:abc", "udpin:0.0.0.0:abc — port must be a number (got 'abc')"),
            ("tcp:host:-1", "tcp:host:-1 — port must be a number (got '-1')"),
            ("udpin:0.0.0.0:70000", "udpin:0.0.0.0:70000 — port 70000 is out of range (0-65535)"),
            (
                "udpout:127.0.0.1:0",
                "udpout:127.0.0.1:0 — port 0 is not a destination (only udpin and tcpin may bind port 0 to let the OS pick)",
            ),
            (
                "udpbcast:127.0.0.1:14540",
                "udpbcast:127.0.0.1:14540 — unknown scheme 'udpbcast' (expected udpin, udpout, tcp, tcpin, serial)",
            ),
            (
                "/dev/ttyUSB0",
                "/dev/ttyUSB0 — no scheme (expected udpin:HOST:PORT, udpout:HOST:PORT, tcp:HOST:PORT, tcpin:HOST:PORT or serial:PATH:BAUD)",
            ),
            (
                ":14540",
                ":14540 — no scheme (expected udpin:HOST:PORT, udpout:HOST:PORT, tcp:HOST:PORT, tcpin:HOST:PORT or serial:PATH:BAUD)",
            ),
            ("udpin:::1:14540", "udpin:::1:14540 — an IPv6 host must be in brackets, e.g. udpin:[::]:14540"),
            ("udpin:[::1:14540", "udpin:[::1:14540 — malformed [IPv6] host (expected [ADDRESS]:PORT)"),
            ("udpin:[::1]x:14540", "udpin:[::1]x:14540 — malformed [IPv6] host (expected [ADDRESS]:PORT)"),
            ("udpin:[::1]", "udpin:[::1] — missing port"),
            ("udpin:[]:1", "udpin:[]:1 — missing host"),
            ("tcp:my host:5760", "tcp:my host:5760 — invalid host 'my host'"),
            ("serial:/dev/ttyUSB0:fast", "serial:/dev/ttyUSB0:fast — baud must be a number (got 'fast')"),
            ("serial:/dev/ttyUSB0", "serial:/dev/ttyUSB0 — missing baud (expected serial:PATH:BAUD)"),
            ("serial:/dev/ttyUSB0:", "serial:/dev/ttyUSB0: — missing baud (expected serial:PATH:BAUD)"),
            ("serial::57600", "serial::57600 — missing device path"),
            ("serial:", "serial: — missing device path"),
            ("serial:/dev/ttyS0:0", "serial:/dev/ttyS0:0 — baud 0 is out of range (1-4294967295)"),
            (
                "serial:/dev/ttyS0:99999999999",
                "serial:/dev/ttyS0:99999999999 — baud 99999999999 is out of range (1-4294967295)",
            ),
        ];
        for (s, want) in cases {
            assert_eq!(err(s), want, "input {s:?}");
        }
    }

    #[test]
    fn error_exposes_the_problem_for_matching() {
        let e = "mqtt:1.2.3.4:5".parse::<ConnString>().unwrap_err();
        assert_eq!(e.problem(), &Problem::UnknownScheme("mqtt".into()));
        assert_eq!(e.input(), "mqtt:1.2.3.4:5");
    }
}
