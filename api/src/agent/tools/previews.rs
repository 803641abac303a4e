//! Bounded previews of a run's output and log for an agent, labelled as untrusted
//! customer data that carries no instructions: the output's first 64 KiB, the
//! log's first and last 8 KiB (16 KiB in all). A lane whose object cannot be read
//! (object storage down) degrades to `{available: false}`.

use crate::objects::Objects;
use serde_json::{Value, json};

/// The longest output preview.
pub const OUTPUT_PREVIEW_BYTES: u64 = 64 * 1024;
/// The longest log preview (head plus tail).
pub const LOG_PREVIEW_BYTES: u64 = 16 * 1024;

/// The labelled preview of an object's text.
fn labelled(label: &str, byte_length: u64, truncated: bool, text: String) -> Value {
    json!({
        "available": true,
        "untrusted": true,
        "label": label,
        "truncated": truncated,
        "byte_length": byte_length,
        "text": text,
        "content_kind": "customer_data",
        "not_instructions": true,
    })
}

/// The output's first [`OUTPUT_PREVIEW_BYTES`].
pub async fn output(objects: &Objects, key: &str) -> Value {
    let read = async {
        let size = objects.size(key).await?;
        let bytes = objects
            .get_range(key, 0..size.min(OUTPUT_PREVIEW_BYTES))
            .await?;
        anyhow::Ok((size, bytes))
    };
    match read.await {
        Ok((size, bytes)) => labelled(
            "untrusted_customer_output",
            size,
            size > OUTPUT_PREVIEW_BYTES,
            String::from_utf8_lossy(&bytes).into_owned(),
        ),
        Err(_) => json!({"available": false}),
    }
}

/// The log's head and tail, [`LOG_PREVIEW_BYTES`] in all, with the size of what
/// lies between them named.
pub async fn log(objects: &Objects, key: &str) -> Value {
    let half = LOG_PREVIEW_BYTES / 2;
    let read = async {
        let size = objects.size(key).await?;
        if size <= LOG_PREVIEW_BYTES {
            let all = objects.get_range(key, 0..size).await?;
            return anyhow::Ok((size, String::from_utf8_lossy(&all).into_owned()));
        }
        let head = objects.get_range(key, 0..half).await?;
        let tail = objects.get_range(key, size - half..size).await?;
        let text = format!(
            "{}\n[... {} bytes omitted ...]\n{}",
            String::from_utf8_lossy(&head),
            size - LOG_PREVIEW_BYTES,
            String::from_utf8_lossy(&tail)
        );
        anyhow::Ok((size, text))
    };
    match read.await {
        Ok((size, text)) => labelled(
            "untrusted_customer_log",
            size,
            size > LOG_PREVIEW_BYTES,
            text,
        ),
        Err(_) => json!({"available": false}),
    }
}
