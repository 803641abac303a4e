//! Secrets over HTTP: encrypted writes and their refusals, slot resolution in the
//! menu, runs that receive values nobody can read back, approvals, and the leak
//! and shredding checks.

mod approvals;
mod consent;
mod flow;
mod writes;

use crate::environments::Caller;
use crate::runs::post_keyed;
use crate::support::TestApp;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Command, Stdio};

/// The transit public key the service serves.
pub async fn public_key(app: &TestApp) -> String {
    let response = app
        .client
        .get(format!("{}/public/info/model_key/public_key", app.base))
        .send()
        .await
        .unwrap();
    let body: Value = response.json().await.unwrap();
    body["public_key_pem"].as_str().unwrap().to_string()
}

/// Encrypts `value` to the key with the independent Python client (`seal.py`).
pub fn python_seal(public_key_pem: &str, value: &str) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/http/secrets/seal.py");
    let mut child = Command::new("python3")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let request = json!({"public_key_pem": public_key_pem, "value": value});
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "seal.py failed (is `cryptography` installed?)"
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Encrypts `value` to the key with the Rust crates (rsa, aes-gcm).
pub fn rust_seal(public_key_pem: &str, value: &[u8]) -> Value {
    use aes_gcm::aead::{Aead, KeyInit, OsRng};
    use aes_gcm::{AeadCore, Aes256Gcm};
    use rsa::pkcs8::DecodePublicKey;
    let public = rsa::PublicKey::from_public_key_pem(public_key_pem).unwrap();
    let key = Aes256Gcm::generate_key(&mut OsRng);
    let iv = Aes256Gcm::generate_nonce(&mut OsRng);
    let ciphertext = Aes256Gcm::new(&key).encrypt(&iv, value).unwrap();
    let encrypted_key = public
        .oaep_encrypt::<rsa::sha2::Sha256>(key.as_slice())
        .unwrap();
    json!({
        "encrypted_key": STANDARD.encode(encrypted_key),
        "iv": STANDARD.encode(iv),
        "ciphertext": STANDARD.encode(ciphertext),
    })
}

/// A write body for a slot of a task.
pub fn write_body(scope: &str, consumer: &str, task: &str, slot: &str, sealed: Value) -> Value {
    json!({"consumer_scope": scope, "consumer_id": consumer, "task_id": task,
           "slot_name": slot, "encrypted_value": sealed})
}

/// `POST /secrets...` with an `Idempotency-Key`.
pub async fn secret_post(caller: &Caller<'_>, path: &str, key: &str, body: Value) -> (u16, Value) {
    post_keyed(caller, path, key, Some(body)).await
}
