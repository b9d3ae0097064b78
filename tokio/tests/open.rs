//! Why a link does not open: the host's transport errors, the string or the OS, saying what was
//! tried.

use nexus_host::offboard_client::OffboardOptions;
use nexus_host::transport::LinkError;
use nexus_tokio::AsyncClient;

#[tokio::test(flavor = "current_thread")]
async fn a_string_that_does_not_parse_is_a_parse_error() {
    match AsyncClient::open("udpin:nowhere", OffboardOptions::default()).await {
        Err(LinkError::Parse(e)) => assert!(!e.to_string().is_empty()),
        Err(e) => panic!("not a parse error: {e}"),
        Ok(_) => panic!("a malformed string opened"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_port_in_use_says_what_was_bound_and_why() {
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let conn = format!("udpin:127.0.0.1:{port}");
    match AsyncClient::open(&conn, OffboardOptions::default()).await {
        Err(LinkError::Open(e)) => {
            assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse, "{e}");
            assert_eq!(e.conn().to_string(), conn);
            let text = e.to_string();
            assert!(
                text.starts_with(&format!("{conn} — cannot bind UDP 127.0.0.1:{port}")),
                "{text}"
            );
            assert!(text.contains("another program already listens"), "{text}");
        }
        Err(e) => panic!("not an open error: {e}"),
        Ok(_) => panic!("a port in use opened"),
    }
}
