//! Room settings the sandbox reads: a room's jobs list
//! (`PATCH /private/chatrooms/setting/jobs/{chatroom_id}`) and the rooms carrying the
//! `sandbox` job (`GET /private/chatrooms/by_job/sandbox` and `/numOfData`).

use crate::support::{As, TestApp, json};
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

const JOBS: &str = "/private/chatrooms/setting/jobs";
const BY_JOB: &str = "/private/chatrooms/by_job/sandbox";

/// Company `acme`: rooms `lab` and `den` in department `rnd`, `ops-room` in `ops`;
/// `dm` manages `rnd`, `lead` manages `den`, `member` is in `lab` and `den` (and
/// keeps `den` among its favourites), `outsider` is in `ops-room`; a sandbox-scoped
/// key and a LINE client in `lab`. Company `globex` with its own room.
fn directory() -> Value {
    json!({"companies": [
        {"ref": "acme", "name": "Acme",
         "departments": [{"ref": "rnd", "name": "R&D"}, {"ref": "ops", "name": "Ops"}],
         "chatrooms": [{"ref": "lab", "name": "lab", "department": "rnd"},
                       {"ref": "den", "name": "den", "department": "rnd"},
                       {"ref": "ops-room", "name": "ops room", "department": "ops"}],
         "users": [
            {"ref": "boss", "username": "boss", "role": 3},
            {"ref": "dm", "username": "dm", "role": 1, "manages_departments": ["rnd"]},
            {"ref": "lead", "username": "lead", "role": 1, "chatrooms": ["den"], "manages_chatrooms": ["den"]},
            {"ref": "member", "username": "member", "role": 1, "chatrooms": ["lab", "den"],
             "favourite_chatrooms": ["den"]},
            {"ref": "outsider", "username": "outsider", "role": 1, "chatrooms": ["ops-room"]}],
         "api_keys": [
            {"ref": "bot", "user": "member", "scope": "sandbox", "chatrooms": ["lab"]},
            {"ref": "line", "social_client": "line1", "scope": "full"}],
         "social_clients": [{"ref": "line1", "platform": "line", "platform_user_id": "U1", "chatrooms": ["lab"]}]},
        {"ref": "globex", "name": "Globex",
         "chatrooms": [{"ref": "hq", "name": "hq"}],
         "users": [{"ref": "ceo", "username": "ceo", "role": 5, "chatrooms": ["hq"], "manages_chatrooms": ["hq"]}]}
    ]})
}

struct Rooms {
    app: TestApp,
    applied: api::admin::directory::Applied,
}

impl Rooms {
    async fn new() -> Self {
        let app = TestApp::spawn().await;
        let applied = app.apply(directory()).await;
        Self { app, applied }
    }

    fn token(&self, company: &str, user: &str) -> String {
        self.applied.companies[company].users[user].token.clone()
    }

    fn room(&self, company: &str, room: &str) -> Uuid {
        self.applied.companies[company].chatrooms[room]
    }

    fn department(&self, company: &str, department: &str) -> Uuid {
        self.applied.companies[company].departments[department]
    }

    async fn patch(&self, user: &str, room: Uuid, body: Value) -> (u16, Value) {
        let request = self.app.request(Method::PATCH, &format!("{JOBS}/{room}"));
        json(
            request
                .bearer_token(&self.token("acme", user))
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    async fn list(&self, user: &str, query: &str) -> (u16, Value) {
        let request = self.app.request(Method::GET, &format!("{BY_JOB}{query}"));
        json(
            request
                .bearer_token(&self.token("acme", user))
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    async fn count(&self, user: &str, query: &str) -> i64 {
        let request = self
            .app
            .request(Method::GET, &format!("{BY_JOB}/numOfData{query}"));
        let (status, body) = json(
            request
                .bearer_token(&self.token("acme", user))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        body["total"].as_i64().unwrap()
    }

    fn names(page: &Value) -> Vec<String> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_string())
            .collect()
    }
}

#[tokio::test]
async fn room_managers_set_the_jobs_list_and_null_restores_auto_detection() {
    let t = Rooms::new().await;
    let (lab, den) = (t.room("acme", "lab"), t.room("acme", "den"));
    let sandbox = json!({"jobs": ["sandbox"]});
    // The chatroom manager ladder decides; a same-company non-manager is 403.
    for user in ["member", "outsider", "lead"] {
        let (status, body) = t.patch(user, lab, sandbox.clone()).await;
        assert_eq!(status, 403, "{user}: {body}");
    }
    let hq = t.room("globex", "hq");
    assert_eq!(t.patch("boss", hq, sandbox.clone()).await.0, 404);
    assert_eq!(
        t.patch("boss", Uuid::new_v4(), sandbox.clone()).await.0,
        404
    );
    let (status, set) = t.patch("dm", lab, sandbox.clone()).await;
    assert_eq!(status, 200, "{set}");
    assert_eq!(set["jobs"], json!(["sandbox"]));
    assert_eq!(set["effective_jobs"], json!(["sandbox"]));
    assert_eq!(set["auto_detected"], false);
    // Bad lists change nothing.
    let too_many: Vec<String> = (0..33).map(|i| format!("job{i}")).collect();
    for body in [
        json!({}),
        json!({"jobs": ["Sandbox!"]}),
        json!({"jobs": too_many}),
        json!({"jobs": ["sandbox"], "extra": 1}),
        json!({"jobs": "sandbox"}),
    ] {
        let (status, answer) = t.patch("lead", den, body.clone()).await;
        assert_eq!(status, 422, "{body}: {answer}");
    }
    let (status, set) = t
        .patch(
            "lead",
            den,
            json!({"jobs": ["sandbox", "reports", "sandbox"]}),
        )
        .await;
    assert_eq!(status, 200, "{set}");
    assert_eq!(set["jobs"], json!(["reports", "sandbox"]));
    // `null` restores auto-detection: no task is enabled in the room, so no job.
    let (status, reset) = t.patch("boss", den, json!({"jobs": null})).await;
    assert_eq!(status, 200, "{reset}");
    assert_eq!(reset["jobs"], Value::Null);
    assert_eq!(reset["effective_jobs"], json!([]));
    assert_eq!(reset["auto_detected"], true);
    // A restricted key is refused at the gate.
    let request = t.app.request(Method::PATCH, &format!("{JOBS}/{lab}"));
    let key = t.applied.companies["acme"].api_keys["bot"]
        .key
        .clone()
        .unwrap();
    let (status, _) = json(request.api_key(&key).json(&sandbox).send().await.unwrap()).await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn rooms_with_the_sandbox_job_list_favourites_first_and_count_the_same_rooms() {
    let t = Rooms::new().await;
    let (lab, den) = (t.room("acme", "lab"), t.room("acme", "den"));
    assert_eq!(t.count("member", "").await, 0);
    t.patch("dm", lab, json!({"jobs": ["sandbox"]})).await;
    t.patch("dm", den, json!({"jobs": ["sandbox"]})).await;
    t.patch(
        "boss",
        t.room("acme", "ops-room"),
        json!({"jobs": ["reports"]}),
    )
    .await;
    // Joined rooms: the favourite first, whatever the order of names.
    let (status, page) = t.list("member", "").await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(Rooms::names(&page), ["den", "lab"]);
    assert_eq!(page["items"][0]["favourite"], true);
    assert_eq!(page["items"][1]["effective_jobs"], json!(["sandbox"]));
    assert_eq!(
        (page["offset"].as_i64(), page["limit"].as_i64()),
        (Some(0), Some(100))
    );
    let (_, desc) = t.list("member", "?order=desc").await;
    assert_eq!(Rooms::names(&desc), ["den", "lab"]);
    let (_, second) = t.list("member", "?offset=1&limit=1").await;
    assert_eq!(Rooms::names(&second), ["lab"]);
    assert_eq!(t.count("member", "?offset=1&limit=1").await, 2);
    // The outsider joined only a room without the job.
    assert_eq!(t.count("outsider", "").await, 0);
    // A department's rooms the caller can see: the department manager sees both.
    let rnd = t.department("acme", "rnd");
    let (_, managed) = t.list("dm", &format!("?department_id={rnd}")).await;
    assert_eq!(Rooms::names(&managed), ["den", "lab"]);
    assert_eq!(t.count("lead", &format!("?department_id={rnd}")).await, 1);
    assert_eq!(
        t.count("outsider", &format!("?department_id={rnd}")).await,
        0
    );
    assert_eq!(t.count("boss", &format!("?department_id={rnd}")).await, 2);
    // A department outside the company, and bad paging.
    let (status, _) = t
        .list("dm", &format!("?department_id={}", Uuid::new_v4()))
        .await;
    assert_eq!(status, 404);
    for query in [
        "?limit=0",
        "?limit=101",
        "?offset=-1",
        "?order=sideways",
        "?x=1",
    ] {
        let (status, body) = t.list("member", query).await;
        assert_eq!(status, 422, "{query}: {body}");
    }
    // A social media client lists the rooms it joined.
    let key = t.applied.companies["acme"].api_keys["line"]
        .key
        .clone()
        .unwrap();
    let request = t.app.request(Method::GET, BY_JOB);
    let (status, page) = json(request.api_key(&key).send().await.unwrap()).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(Rooms::names(&page), ["lab"]);
    // Resetting to auto-detection drops a room without enabled tasks.
    t.patch("dm", den, json!({"jobs": null})).await;
    assert_eq!(t.count("member", "").await, 1);
}
