//! A seeded server with helpers for custom-table requests.

use crate::support::{As, Options, Seed, TestApp, json, standard_directory};
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

pub const BASE: &str = "/private/module/custom_tables";

/// A seeded server.
pub struct Tables {
    pub app: TestApp,
    pub seed: Seed,
}

impl Tables {
    pub async fn new() -> Self {
        Self::with_options(Options::default()).await
    }

    /// The standard directory on a server with `options`.
    pub async fn with_options(options: Options) -> Self {
        let app = TestApp::spawn_with(options).await;
        let seed = app.seed().await;
        Self { app, seed }
    }

    /// The standard directory plus `roamer` (no department; member of the rooms
    /// `lab` and `ops room`) and `newbie` (no department, no room).
    pub async fn with_cast() -> Self {
        let app = TestApp::spawn().await;
        let mut directory = standard_directory();
        let users = directory["companies"][0]["users"].as_array_mut().unwrap();
        users.push(json!({"ref": "roamer", "username": "roamer", "role": 1, "chatrooms": ["lab", "ops-room"]}));
        users.push(json!({"ref": "newbie", "username": "newbie", "role": 1}));
        let seed = Seed(app.apply(directory).await);
        Self { app, seed }
    }

    /// A user's id (company acme).
    pub fn user(&self, user: &str) -> Uuid {
        self.seed.user("acme", user)
    }

    /// The social media client `line1`'s id.
    pub fn client(&self) -> Uuid {
        self.seed.0.companies["acme"].social_clients["line1"].id
    }

    pub fn token(&self, user: &str) -> String {
        let company = if user == "ceo" { "globex" } else { "acme" };
        self.seed.token(company, user)
    }

    pub fn department(&self, department: &str) -> Uuid {
        self.seed.0.companies["acme"].departments[department]
    }

    /// The mount of a scope: `company`, `department:rnd`, `chatroom:lab`.
    pub fn mount(&self, scope: &str) -> String {
        match scope.split_once(':') {
            Some(("department", d)) => format!("{BASE}/department/{}", self.department(d)),
            Some(("chatroom", r)) => format!("{BASE}/chatroom/{}", self.seed.room("acme", r)),
            _ => format!("{BASE}/company"),
        }
    }

    pub async fn call(
        &self,
        method: Method,
        path: &str,
        user: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self.app.request(method, path);
        // `line1` is the social media client of the room `lab`, calling with its key.
        request = if user == "line1" {
            request.api_key(&self.seed.key("acme", "line"))
        } else {
            request.bearer_token(&self.token(user))
        };
        if let Some(body) = body {
            request = request.json(&body);
        }
        json(request.send().await.unwrap()).await
    }

    /// Creates a table and returns its path (`<mount>/tables/<id>`).
    pub async fn table(&self, scope: &str, user: &str, name: &str) -> String {
        let mount = self.mount(scope);
        let (status, body) = self
            .call(
                Method::POST,
                &format!("{mount}/tables"),
                user,
                Some(json!({"name": name})),
            )
            .await;
        assert_eq!(status, 201, "create table: {body}");
        format!("{mount}/tables/{}", body["id"].as_str().unwrap())
    }

    /// A company table of the other company (globex), created by its CEO.
    pub async fn table_as_ceo(&self) -> String {
        self.table("company", "ceo", "globex table").await
    }

    pub async fn add_column(&self, table: &str, user: &str, column: Value) -> (u16, Value) {
        self.call(
            Method::POST,
            &format!("{table}/columns"),
            user,
            Some(column),
        )
        .await
    }

    /// Adds a column that must be accepted; returns its key.
    pub async fn column(&self, table: &str, column: Value) -> String {
        let (status, body) = self.add_column(table, "boss", column).await;
        assert_eq!(status, 200, "add column: {body}");
        body["column"]["id"].as_str().unwrap().to_string()
    }

    /// The internal key of a column (as the manager `boss` lists it).
    pub async fn column_key(&self, table: &str, name: &str) -> String {
        let (_, columns) = self
            .call(Method::GET, &format!("{table}/columns"), "boss", None)
            .await;
        columns
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no column {name}: {columns}"))["id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// The first page of a table's records as `user` reads them (must answer 200).
    pub async fn records(&self, table: &str, user: &str) -> Value {
        let (status, page) = self
            .call(Method::GET, &format!("{table}/records"), user, None)
            .await;
        assert_eq!(status, 200, "{user} reads {table}: {page}");
        page
    }

    pub async fn insert(&self, table: &str, user: &str, data: Value) -> (u16, Value) {
        self.call(
            Method::POST,
            &format!("{table}/records"),
            user,
            Some(json!({"data": data})),
        )
        .await
    }

    /// Inserts a record that must be accepted; returns it.
    pub async fn record(&self, table: &str, data: Value) -> Value {
        let (status, body) = self.insert(table, "boss", data).await;
        assert_eq!(status, 201, "insert: {body}");
        body
    }

    pub async fn search(&self, table: &str, body: Value) -> (u16, Value) {
        self.call(
            Method::POST,
            &format!("{table}/records/search"),
            "boss",
            Some(body),
        )
        .await
    }

    pub async fn export_csv(&self, table: &str, body: Value) -> String {
        self.export(table, body).await.text().await.unwrap()
    }

    /// The first sheet's XML of the table's XLSX export (as the boss).
    pub async fn export_xlsx_sheet(&self, table: &str) -> String {
        let response = self
            .export(table, serde_json::json!({"format": "xlsx"}))
            .await;
        let bytes = response.bytes().await.expect("the whole file").to_vec();
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
            .expect("an XLSX file is a zip archive");
        let mut sheet = String::new();
        std::io::Read::read_to_string(
            &mut archive.by_name("xl/worksheets/sheet1.xml").unwrap(),
            &mut sheet,
        )
        .unwrap();
        sheet
    }

    /// A 200 answer of an export (as the boss).
    async fn export(&self, table: &str, body: Value) -> reqwest::Response {
        let response = self
            .app
            .request(Method::POST, &format!("{table}/records/export"))
            .bearer_token(&self.token("boss"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        response
    }
}

/// The `detail.code` of an error answer.
pub fn code(got: &(u16, Value)) -> &str {
    got.1["detail"]["code"].as_str().unwrap_or("")
}
