//! The `file` part of multipart uploads: every upload route carries its bytes in
//! that one part (see `openapi::conventions`), finds it the same way and answers
//! a malformed upload alike.

use crate::error::{ApiError, ApiResult};
use axum::extract::Multipart;
use axum::extract::multipart::Field;
use domain::validation::ViolationKind;

/// 422 `value_error` at `body.file`: the upload routes' answer to a malformed
/// upload or a file they refuse.
pub fn invalid_file(message: String) -> ApiError {
    ApiError::invalid(
        &["body", "file"],
        ViolationKind::Rule {
            kind: "value_error",
            message,
        },
        None,
    )
}

/// Hands the part named `file` to `use_part` (the parts before it skipped) and
/// answers what it answers. `framing` answers a malformed body (each route keeps
/// its own error); a body without the part is 422 missing `body.file`. The part
/// is lent rather than returned: it borrows the body it is read from.
pub async fn with_file_part<T>(
    mut multipart: Multipart,
    framing: impl Fn(String) -> ApiError,
    use_part: impl AsyncFnOnce(Field<'_>) -> ApiResult<T>,
) -> ApiResult<T> {
    while let Some(field) = multipart
        .next_field()
        .await
        .map_err(|e| framing(e.body_text()))?
    {
        if field.name() == Some("file") {
            return use_part(field).await;
        }
    }
    Err(ApiError::invalid(
        &["body", "file"],
        ViolationKind::Missing,
        None,
    ))
}

/// The bytes of the `file` part, read chunk by chunk so that a file over `limit`
/// bytes is refused with `too_large` before it is all held in memory.
pub async fn read_file_part(
    multipart: Multipart,
    limit: u64,
    too_large: impl FnOnce() -> ApiError,
) -> ApiResult<Vec<u8>> {
    with_file_part(multipart, invalid_file, async |mut field| {
        let mut bytes = Vec::new();
        while let Some(chunk) = field
            .chunk()
            .await
            .map_err(|e| invalid_file(e.body_text()))?
        {
            if (bytes.len() + chunk.len()) as u64 > limit {
                return Err(too_large());
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    })
    .await
}
