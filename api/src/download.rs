//! Files handed to a client to save, never to render: `Content-Disposition:
//! attachment` with a reduced file name, `X-Content-Type-Options: nosniff` and
//! `Cache-Control: no-store`
//! (public links, run artifacts, table attachment files).

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

/// `attachment; filename="<name>"` with the name reduced to safe characters.
pub fn attachment(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("attachment; filename=\"{safe}\"")
}

/// A response of `body` as a file to save: its content type, disposition and
/// `nosniff`.
pub fn attachment_response(body: Body, content_type: &str, disposition: String) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    let value = |text: &str| {
        HeaderValue::from_str(text).unwrap_or(HeaderValue::from_static("application/octet-stream"))
    };
    headers.insert(header::CONTENT_TYPE, value(content_type));
    headers.insert(header::CONTENT_DISPOSITION, value(&disposition));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Served through links and capabilities that can be revoked: no shared cache
    // may keep serving the bytes after that.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
