//! The restricted (sandbox-scoped) API key gate of spec sections 5.4 and 5.5.
//!
//! A restricted key may use the chatroom menu, manual submission, its own runs (list,
//! status, content, artifacts, download) and cancel. Everything else is refused at
//! this first gate, with the exact status the spec names: 403 for management
//! families, paths without a chatroom segment and rooms outside the key's allowlist;
//! 405 for room paths the sandbox route registry excludes; 404 for author upload
//! handles and artifact public links. The decision is a pure function of the method,
//! the path and the key's rooms, so the whole matrix is tested as a table.

use crate::error::ApiError;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use domain::principal::Principal;
use uuid::Uuid;

/// The message of a 403 at the authentication layer.
pub const FORBIDDEN_PATH: &str = "This API key's scope does not allow this path.";
/// The message of a 403 for a room outside the key's allowlist.
pub const FORBIDDEN_ROOM: &str = "This API key may not access this chatroom.";

/// What the gate decides for a restricted key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Continue to the route.
    Allow,
    /// 403 at the authentication layer.
    Forbidden(&'static str),
    /// 405.
    MethodNotAllowed,
    /// 404.
    NotFound,
}

/// Decides a sandbox path (relative to `/private/module/sandbox`) for a restricted
/// key allowed into `rooms`.
pub fn sandbox_verdict(method: &Method, path: &str, rooms: &[Uuid]) -> Verdict {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segments.as_slice() {
        ["chatrooms", room, rest @ ..] => {
            let allowed = Uuid::parse_str(room).is_ok_and(|id| rooms.contains(&id));
            if !allowed {
                return Verdict::Forbidden(FORBIDDEN_ROOM);
            }
            room_verdict(method, rest)
        }
        ["tasks", _, "script-uploads" | "bundle-uploads", ..] => Verdict::NotFound,
        _ => Verdict::Forbidden(FORBIDDEN_PATH),
    }
}

/// Routes under `/chatrooms/{cid}` (the room is already allowed).
fn room_verdict(method: &Method, rest: &[&str]) -> Verdict {
    let get = method == Method::GET || method == Method::HEAD;
    let post = method == Method::POST;
    match rest {
        ["menu"] if get => Verdict::Allow,
        ["runs"] if get || post => Verdict::Allow,
        ["runs", _] | ["runs", _, "content" | "artifacts"] if get => Verdict::Allow,
        ["runs", _, "artifacts", _, "download"] | ["runs", _, "cancel"] if post => Verdict::Allow,
        ["runs", _, "artifacts", _, "public-link"] => Verdict::NotFound,
        ["runs", _, "retry"] | ["runs", _, "log" | "output", "public-link"] => {
            Verdict::MethodNotAllowed
        }
        ["granted-jobs", ..] | ["bindings", ..] => Verdict::MethodNotAllowed,
        ["quick-run"] => Verdict::Forbidden(FORBIDDEN_PATH),
        _ => Verdict::MethodNotAllowed,
    }
}

/// Turns a verdict into a refusal.
pub fn enforce(verdict: Verdict) -> Result<(), ApiError> {
    match verdict {
        Verdict::Allow => Ok(()),
        Verdict::Forbidden(message) => Err(ApiError::Forbidden(message)),
        Verdict::MethodNotAllowed => Err(ApiError::MethodNotAllowed),
        Verdict::NotFound => Err(ApiError::NotFound),
    }
}

/// Middleware on the sandbox router: applies the gate to restricted principals.
pub async fn sandbox_gate(
    State(prefix): State<&'static str>,
    request: Request,
    next: Next,
) -> Response {
    let Some(principal) = request.extensions().get::<Principal>() else {
        return next.run(request).await;
    };
    if let Some(rooms) = principal
        .allowed_chatroom_ids
        .as_deref()
        .filter(|_| principal.is_restricted())
    {
        let full = request
            .extensions()
            .get::<axum::extract::OriginalUri>()
            .map_or_else(
                || request.uri().path().to_string(),
                |o| o.path().to_string(),
            );
        let path = full.strip_prefix(prefix).unwrap_or(&full);
        if let Err(error) = enforce(sandbox_verdict(request.method(), path, rooms)) {
            return error.into_response();
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOM: Uuid = Uuid::from_u128(1);
    const OTHER: Uuid = Uuid::from_u128(2);

    fn verdict(method: Method, path: &str) -> Verdict {
        sandbox_verdict(
            &method,
            &path
                .replace("{cid}", &ROOM.to_string())
                .replace("{other}", &OTHER.to_string()),
            &[ROOM],
        )
    }

    /// The whole matrix of spec sections 5.4 and 5.5, one row per route family.
    #[test]
    fn restricted_key_matrix() {
        use Method as M;
        use Verdict::*;
        let rows: &[(Method, &str, Verdict)] = &[
            (M::GET, "/chatrooms/{cid}/menu", Allow),
            (M::POST, "/chatrooms/{cid}/runs", Allow),
            (M::GET, "/chatrooms/{cid}/runs", Allow),
            (M::GET, "/chatrooms/{cid}/runs/r1", Allow),
            (M::GET, "/chatrooms/{cid}/runs/r1/content", Allow),
            (M::GET, "/chatrooms/{cid}/runs/r1/artifacts", Allow),
            (
                M::POST,
                "/chatrooms/{cid}/runs/r1/artifacts/a1/download",
                Allow,
            ),
            (M::POST, "/chatrooms/{cid}/runs/r1/cancel", Allow),
            (
                M::POST,
                "/chatrooms/{cid}/runs/r1/artifacts/a1/public-link",
                NotFound,
            ),
            (
                M::DELETE,
                "/chatrooms/{cid}/runs/r1/artifacts/a1/public-link",
                NotFound,
            ),
            (M::POST, "/chatrooms/{cid}/runs/r1/retry", MethodNotAllowed),
            (
                M::POST,
                "/chatrooms/{cid}/runs/r1/log/public-link",
                MethodNotAllowed,
            ),
            (
                M::DELETE,
                "/chatrooms/{cid}/runs/r1/output/public-link",
                MethodNotAllowed,
            ),
            (M::GET, "/chatrooms/{cid}/granted-jobs", MethodNotAllowed),
            (
                M::POST,
                "/chatrooms/{cid}/granted-jobs/t1/enable",
                MethodNotAllowed,
            ),
            (
                M::POST,
                "/chatrooms/{cid}/granted-jobs/t1/disable",
                MethodNotAllowed,
            ),
            (M::GET, "/chatrooms/{cid}/bindings", MethodNotAllowed),
            (
                M::POST,
                "/chatrooms/{cid}/quick-run",
                Forbidden(FORBIDDEN_PATH),
            ),
            (M::GET, "/chatrooms/{other}/menu", Forbidden(FORBIDDEN_ROOM)),
            (
                M::POST,
                "/chatrooms/{other}/runs",
                Forbidden(FORBIDDEN_ROOM),
            ),
            (
                M::GET,
                "/chatrooms/not-a-uuid/menu",
                Forbidden(FORBIDDEN_ROOM),
            ),
            (M::GET, "/environments", Forbidden(FORBIDDEN_PATH)),
            (
                M::POST,
                "/environments/e1/context-uploads",
                Forbidden(FORBIDDEN_PATH),
            ),
            (M::GET, "/tasks", Forbidden(FORBIDDEN_PATH)),
            (M::GET, "/tasks/t1/runs", Forbidden(FORBIDDEN_PATH)),
            (M::POST, "/tasks/t1/script-uploads", NotFound),
            (M::POST, "/tasks/t1/bundle-uploads", NotFound),
            (M::GET, "/settings", Forbidden(FORBIDDEN_PATH)),
            (M::PUT, "/settings", Forbidden(FORBIDDEN_PATH)),
            (M::POST, "/bindings", Forbidden(FORBIDDEN_PATH)),
            (M::GET, "/bindings/b1", Forbidden(FORBIDDEN_PATH)),
            (M::POST, "/secrets", Forbidden(FORBIDDEN_PATH)),
            (M::POST, "/secret-approvals", Forbidden(FORBIDDEN_PATH)),
            (
                M::POST,
                "/shared-task-secret-approvals",
                Forbidden(FORBIDDEN_PATH),
            ),
            (M::GET, "/me", Forbidden(FORBIDDEN_PATH)),
            (M::GET, "/runs", Forbidden(FORBIDDEN_PATH)),
        ];
        for (method, path, expected) in rows {
            assert_eq!(verdict(method.clone(), path), *expected, "{method} {path}");
        }
    }
}
