//! The client workers: acknowledged writes across aggregates, and what they saw.

use crate::setup::call;
use crate::{SANDBOX, TABLES};
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// What the clients saw acknowledged, by kind: ids.
#[derive(Default)]
pub(crate) struct Acknowledged {
    pub(crate) ids: BTreeMap<&'static str, Vec<String>>,
    /// Idempotency key → every run id it answered.
    pub(crate) keys: HashMap<String, BTreeSet<String>>,
}

/// What every writer shares: where the server is now, what was set up for it, the
/// stop flag and what the writers saw acknowledged.
pub(crate) struct World {
    pub(crate) base: RwLock<String>,
    pub(crate) token: String,
    pub(crate) room: String,
    pub(crate) version: String,
    pub(crate) table: String,
    pub(crate) column: String,
    pub(crate) stop: AtomicBool,
    pub(crate) acknowledged: Mutex<Acknowledged>,
}

impl World {
    pub(crate) fn base(&self) -> String {
        self.base.read().unwrap().clone()
    }

    fn ack(&self, kind: &'static str, id: &Value) {
        let id = id
            .as_str()
            .expect("an acknowledged write names its id")
            .to_string();
        self.acknowledged
            .lock()
            .unwrap()
            .ids
            .entry(kind)
            .or_default()
            .push(id);
    }

    async fn send(
        &self,
        client: &reqwest::Client,
        path: &str,
        body: Value,
        key: Option<&str>,
    ) -> Option<(u16, Value)> {
        call(
            client,
            &self.base(),
            &self.token,
            Method::POST,
            path,
            Some(body),
            key,
        )
        .await
    }

    /// A keyed run submission, repeated (as a client whose answer was lost would)
    /// until the server answers; then once more with the same key.
    async fn submit_run(&self, client: &reqwest::Client, key: &str) {
        let path = format!("{SANDBOX}/chatrooms/{}/runs", self.room);
        let body = json!({"task_version_id": self.version, "input": {"key": key}});
        for attempt in 0..2 {
            let deadline = Instant::now() + Duration::from_secs(60);
            let answer = loop {
                match self.send(client, &path, body.clone(), Some(key)).await {
                    Some((status, run)) if status < 500 => break Some((status, run)),
                    _ if Instant::now() > deadline || self.stop.load(Ordering::Relaxed) => {
                        break None;
                    }
                    _ => tokio::time::sleep(Duration::from_millis(200)).await,
                }
            };
            let Some((200, run)) = answer else {
                return;
            };
            if attempt == 0 {
                self.ack("run", &run["id"]);
            }
            let id = run["id"].as_str().unwrap().to_string();
            self.acknowledged
                .lock()
                .unwrap()
                .keys
                .entry(key.to_string())
                .or_default()
                .insert(id);
        }
    }

    pub(crate) async fn writer(self: Arc<Self>, worker: usize) {
        let client = reqwest::Client::new();
        let mut i = 0usize;
        while !self.stop.load(Ordering::Relaxed) {
            i += 1;
            let name = format!("w{worker}-{i}");
            match i % 4 {
                0 => {
                    let body = json!({"name": name, "owner_scope": "company"});
                    if let Some((200, task)) = self
                        .send(&client, &format!("{SANDBOX}/tasks"), body, None)
                        .await
                    {
                        self.ack("task", &task["id"]);
                    }
                }
                1 => {
                    let path = format!("{TABLES}/tables/{}/records", self.table);
                    if let Some((201, record)) = self
                        .send(&client, &path, json!({"data": {"Name": name}}), None)
                        .await
                    {
                        self.ack("record", &record["id"]);
                    }
                }
                2 => {
                    // A grant change whose row filter names this write.
                    let path = format!("{TABLES}/tables/{}/permissions", self.table);
                    let body = json!({"subject_type": "chatroom", "subject_id": self.room,
                        "can_read": "filtered",
                        "row_filter": {"column": self.column, "op": "eq", "value": name}});
                    if let Some((200, _)) = self.send(&client, &path, body, None).await {
                        self.ack("grant", &json!(name));
                    }
                }
                _ => self.submit_run(&client, &name).await,
            }
            if self.base.read().unwrap().is_empty() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}
