//! `nexus serve --http ADDR`: MCP over streamable HTTP at `/mcp`, every request with
//! `Authorization: Bearer TOKEN` (else HTTP 401, and no MCP session is made).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request, Response, StatusCode};
use axum::middleware::{self, Next};
use rmcp::transport::streamable_http_server::{
    session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use tokio_util::sync::CancellationToken;

use super::NexusServer;

/// Whether two byte strings are equal, in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn check_token(token: Arc<String>, req: Request<Body>, next: Next) -> Response<Body> {
    let ok = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| same(t.trim().as_bytes(), token.as_bytes()));
    if ok {
        return next.run(req).await;
    }
    let mut r = Response::new(Body::from(
        "missing or wrong bearer token: send Authorization: Bearer TOKEN (the one nexus serve \
         was given with --token or printed)\n",
    ));
    *r.status_mut() = StatusCode::UNAUTHORIZED;
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    r
}

/// Serve until interrupted.
pub(super) async fn serve(
    server: NexusServer,
    addr: SocketAddr,
    token: String,
) -> Result<String, String> {
    let ct = CancellationToken::new();
    let config = StreamableHttpServerConfig::default().with_cancellation_token(ct.child_token());
    let service: StreamableHttpService<NexusServer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.clone()), Default::default(), config);
    let token = Arc::new(token);
    let router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn(move |req, next| {
            check_token(Arc::clone(&token), req, next)
        }));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("--http {addr}: {e}"))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("--http {addr}: {e}"))?;
    eprintln!("nexus serve: listening on http://{local}/mcp");
    let why = Arc::new(std::sync::Mutex::new(String::new()));
    let w = Arc::clone(&why);
    let stop = ct.clone();
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            let reason = super::interrupted().await;
            *w.lock().unwrap_or_else(|e| e.into_inner()) = reason;
            stop.cancel();
        })
        .await
        .map_err(|e| format!("HTTP server: {e}"))?;
    let why = why.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(format!("the HTTP server stopped ({why})"))
}
