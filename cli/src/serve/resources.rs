//! The MCP resources of `nexus serve`: each session's tlog and HTML report, listed and read
//! (bounded), and the server's description of itself.

use super::answers::*;
use super::server::*;
use std::path::Path;
use std::sync::Arc;

use rmcp::model::{
    Implementation, ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{tool_handler, ErrorData as McpError, ServerHandler};

use super::records::{RecordKind, RESOURCE_MAX_BYTES};

#[tool_handler(router = self.tool_router)]
impl ServerHandler for NexusServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("nexus", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "nexus: command simulated PX4 vehicles and wait, on the autopilot's clock, for \
             what they do. start_session, then verbs (takeoff, goto, land, …) and wait_until \
             (timeout_s in sim seconds, wait_cap_s in wall seconds; on reason `cap` call \
             again with since_seq = snapshot.seq). close_sitl when done. Each session's live \
             report is the resource nexus://session/ID/report, its tlog (every MAVLink frame \
             of its link) nexus://session/ID/tlog, and once it closed its HTML report \
             nexus://session/ID/report.html.",
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let mut resources: Vec<Resource> = self
            .sessions
            .list()
            .iter()
            .filter(|s| !s.is_closed())
            .map(|s| {
                Resource::new(
                    format!("nexus://session/{}/report", s.id()),
                    format!("session {} report", s.id()),
                )
                .with_mime_type("application/json")
            })
            .collect();
        for (id, kind, path) in self.records.resources() {
            let what = match kind {
                RecordKind::Tlog => "tlog",
                RecordKind::Html => "HTML report",
            };
            let mut r = Resource::new(kind.uri(id), format!("session {id} {what}"))
                .with_mime_type(kind.mime());
            if let Ok(m) = std::fs::metadata(&path) {
                r = r.with_size(m.len());
            }
            resources.push(r);
        }
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let not_found = || McpError::resource_not_found(format!("no resource {uri}"), None);
        let (id, what) = uri
            .strip_prefix("nexus://session/")
            .and_then(|r| r.split_once('/'))
            .and_then(|(n, what)| Some((n.parse::<u64>().ok()?, what)))
            .ok_or_else(not_found)?;
        let kind = match what {
            "report" => None,
            "tlog" => Some(RecordKind::Tlog),
            "report.html" => Some(RecordKind::Html),
            _ => return Err(not_found()),
        };
        let Some(kind) = kind else {
            let s = self
                .sessions
                .get(id)
                .filter(|s| !s.is_closed())
                .ok_or_else(not_found)?;
            let me = self.clone();
            let report = tokio::task::spawn_blocking(move || me.report(&s))
                .await
                .map_err(|e| McpError::internal_error(e.to_string(), None))?;
            return Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
                vec![
                    ResourceContents::text(to_text(report), uri).with_mime_type("application/json")
                ],
            )));
        };
        let records = Arc::clone(&self.records);
        let read = tokio::task::spawn_blocking(move || {
            let path = records.file(id, kind)?;
            Some(read_bounded(&path))
        })
        .await
        .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let bytes = match read {
            None => return Err(not_found()),
            Some(Err(e)) => return Err(McpError::internal_error(e, None)),
            Some(Ok(b)) => b,
        };
        let contents = match kind {
            RecordKind::Tlog => {
                use base64::Engine;
                ResourceContents::blob(
                    base64::engine::general_purpose::STANDARD.encode(&bytes),
                    uri,
                )
            }
            RecordKind::Html => ResourceContents::text(String::from_utf8_lossy(&bytes), uri),
        }
        .with_mime_type(kind.mime());
        Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
            vec![contents],
        )))
    }
}

/// A records file's bytes, at most [`RESOURCE_MAX_BYTES`].
pub(super) fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    f.take(RESOURCE_MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > RESOURCE_MAX_BYTES {
        return Err(format!(
            "{} is over {} MiB, the most one resource carries: read the file itself",
            path.display(),
            RESOURCE_MAX_BYTES >> 20
        ));
    }
    Ok(bytes)
}
