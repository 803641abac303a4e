//! Request and response bodies of the `/tasks` routes, and the one serializer that
//! decides what an owner and a borrower see of a task version (spec section 1,
//! rule 6).

use crate::access::{TaskVersion, Viewer};
use crate::openapi::enums::string_enum;
use crate::pagination::list_response;
use chrono::{DateTime, Utc};
use domain::environments::environment::OwnerScope;
use domain::tasks::contents::{OutputPolicy, SlotDeclaration};
use domain::tasks::version::ContentState;
use domain::wire::wire;
use projections::read_models::tasks::query::TaskSummary;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use utoipa::ToSchema;
use uuid::Uuid;

/// `SandboxTaskCreateRequest`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxTaskCreateRequest {
    /// 1..256 characters.
    #[schema(min_length = 1, max_length = 256)]
    pub name: String,
    /// Up to 2048 characters.
    #[serde(default)]
    #[schema(max_length = 2048)]
    pub description: String,
    /// `department` or `company` (`chatroom` is refused).
    #[schema(schema_with = string_enum::<OwnerScope>)]
    pub owner_scope: OwnerScope,
    /// The company or department id (the company by default).
    #[serde(default)]
    pub owner_id: Option<Uuid>,
    /// Legacy flag; it does not put the task in the agent catalog.
    #[serde(default)]
    pub agent_enabled: bool,
    /// Removed: the legacy way of creating a chatroom-owned task. Any value is
    /// refused with 403 `chatroom_owner_scope_removed` (tasks are owned by a
    /// department or the company and shared into rooms).
    #[serde(default)]
    #[schema(deprecated, value_type = Option<Uuid>)]
    pub chatroom_id: Option<Value>,
}

/// `SandboxTaskUpdateRequest`: only these three fields.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(min_properties = 1)]
pub struct SandboxTaskUpdateRequest {
    /// New name.
    pub name: Option<String>,
    /// New description.
    pub description: Option<String>,
    /// New legacy flag.
    pub agent_enabled: Option<bool>,
}

/// `SandboxTaskResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxTaskResponse {
    /// Id.
    pub id: Uuid,
    /// `department` or `company`.
    pub owner_scope: String,
    /// The owning department or company.
    pub owner_id: Uuid,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Legacy flag.
    pub agent_enabled: bool,
    /// `active` or `archived`.
    pub lifecycle: String,
    /// Versions created so far.
    pub version_count: i64,
    /// The newest published version, if any.
    pub latest_published_version_id: Option<Uuid>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl From<TaskSummary> for SandboxTaskResponse {
    fn from(summary: TaskSummary) -> Self {
        let row = summary.task;
        Self {
            id: row.id,
            owner_scope: row.owner_scope.as_str().into(),
            owner_id: row.owner_id,
            name: row.name,
            description: row.description,
            agent_enabled: row.agent_enabled,
            lifecycle: wire(&row.lifecycle),
            version_count: row.version_count,
            latest_published_version_id: summary.latest_published_version_id,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

list_response!(
    /// `SandboxTaskListResponse`.
    SandboxTaskListResponse of SandboxTaskResponse
);

/// A field of a PATCH: absent (`None`), `null` (`Some(None)`) or a value.
pub type Patch<T> = Option<Option<T>>;

fn patch<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Patch<T>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// A secret slot as an author may declare it: `{"name": ...}` or a bare string.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum SlotDeclarationInput {
    /// `"API_TOKEN"`.
    Name(String),
    /// `{"name": "API_TOKEN"}`.
    Object {
        /// The slot name.
        name: String,
    },
}

impl From<SlotDeclarationInput> for SlotDeclaration {
    fn from(input: SlotDeclarationInput) -> Self {
        match input {
            SlotDeclarationInput::Name(name) | SlotDeclarationInput::Object { name } => {
                SlotDeclaration { name }
            }
        }
    }
}

/// The fields of `SandboxTaskVersionCreateRequest` and
/// `SandboxTaskVersionUpdateRequest`. On update an absent field is unchanged and
/// `null` clears an optional one; scripts may come inline or as script-upload
/// handles (`*_script_id`).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxTaskVersionRequest {
    /// A ready environment version the task may pin (required at create).
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<Uuid>)]
    pub environment_version_id: Patch<Uuid>,
    /// UTF-8, up to 1 MiB.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<String>)]
    pub startup_script: Patch<String>,
    /// A script-upload handle used as the startup script.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<Uuid>)]
    pub startup_script_id: Patch<Uuid>,
    /// UTF-8, up to 1 MiB.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<String>)]
    pub work_script: Patch<String>,
    /// A script-upload handle used as the work script.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<Uuid>)]
    pub work_script_id: Patch<Uuid>,
    /// Up to 100 names, 64 KiB per value and serialized.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<BTreeMap<String, String>>)]
    pub ordinary_env: Patch<BTreeMap<String, String>>,
    /// Up to 64 KiB.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<String>)]
    pub input_instructions: Patch<String>,
    /// A JSON value, or a string holding JSON text; up to 64 KiB.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<Object>)]
    pub input_example: Patch<Value>,
    /// JSON Schema draft 2020-12 (an object, or a string holding one); up to 64 KiB.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<Object>)]
    pub input_schema: Patch<Value>,
    /// Up to 4096 bytes; empty means `. /workspace/work.sh`.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<String>)]
    pub work_command: Patch<String>,
    /// 1..604680, default 1800.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<i64>)]
    pub timeout_seconds: Patch<i64>,
    /// `{name}` objects or strings.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub secret_slot_declarations: Patch<Vec<SlotDeclarationInput>>,
    /// Default false.
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<bool>)]
    pub requires_confirmation: Patch<bool>,
    /// `{kind: custom_table_writeback | custom_table_command, ...}`
    /// (department-owned tasks only).
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<Object>)]
    pub output_policy: Patch<Value>,
    /// A bundle-upload handle: files unpacked into `/workspace` before the
    /// startup script (`null` removes the bundle).
    #[serde(default, deserialize_with = "patch")]
    #[schema(value_type = Option<Uuid>)]
    pub bundle_id: Patch<Uuid>,
}

/// `SandboxTaskVersionResponse`. Owner-only fields are flattened in from
/// [`OwnerFields`] and absent for a borrower, except `work_command`, which a
/// borrower sees as `null`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxTaskVersionResponse {
    /// Id.
    pub id: Uuid,
    /// Its task.
    pub task_id: Uuid,
    /// Number within the task.
    pub version_number: i64,
    /// `draft`, `published` or `archived`.
    pub state: String,
    /// `active` or `scrubbed`.
    pub content_state: String,
    /// Whether the original content is shown.
    pub source_visible: bool,
    /// The pinned environment version.
    pub environment_version_id: Uuid,
    /// Its environment.
    pub environment_id: Option<Uuid>,
    /// Its environment's name.
    pub environment_name: Option<String>,
    /// Help for input writers.
    pub input_instructions: Option<String>,
    /// A sample input.
    #[schema(value_type = Option<Object>)]
    pub input_example: Option<Value>,
    /// The input schema.
    #[schema(value_type = Option<Object>)]
    pub input_schema: Option<Value>,
    /// Work timeout.
    pub timeout_seconds: i64,
    /// Whether agent submissions need confirmation.
    pub requires_confirmation: bool,
    /// Declared secret slot names.
    pub secret_slot_names: Vec<String>,
    /// `sha256:` of the canonical contents.
    pub canonical_digest: String,
    /// `sha256:` of the owner-only content.
    pub content_hash: String,
    /// Whether a newer published version of the task exists.
    pub update_available: bool,
    /// The owner's work command; always `null` for a borrower.
    pub work_command: Option<String>,
    /// Owner-only fields.
    #[serde(flatten)]
    pub owner: Option<OwnerFields>,
    /// When published.
    pub published_at: Option<DateTime<Utc>>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// The fields only a version's owner sees.
#[derive(Debug, Serialize, ToSchema)]
pub struct OwnerFields {
    /// The startup script.
    pub startup_script: String,
    /// The work script.
    pub work_script: String,
    /// Plain environment variables.
    pub ordinary_env: BTreeMap<String, String>,
    /// Declared secret slots.
    #[schema(value_type = Vec<Object>)]
    pub secret_slot_declarations: Vec<SlotDeclaration>,
    /// The output policy.
    #[schema(value_type = Option<Object>)]
    pub output_policy: Option<OutputPolicy>,
    /// `sha256:` of the scripts.
    pub source_digest: String,
    /// The bundle unpacked into `/workspace` before the startup script.
    pub bundle: Option<super::bundles::SandboxTaskBundle>,
}

list_response!(
    /// `SandboxTaskVersionListResponse`.
    SandboxTaskVersionListResponse of SandboxTaskVersionResponse
);

/// The one serializer of a task version: a borrower never sees scripts,
/// `work_command` (`null`), `source_digest`, `secret_slot_declarations` or
/// `output_policy`.
impl From<TaskVersion> for SandboxTaskVersionResponse {
    fn from(handle: TaskVersion) -> Self {
        version_view(handle)
    }
}

fn version_view(handle: TaskVersion) -> SandboxTaskVersionResponse {
    let detail = handle.row;
    let row = detail.version;
    let contents = row.contents.0;
    let active = row.content_state == ContentState::Active;
    let owner = handle.viewer == Viewer::Owner && active;
    SandboxTaskVersionResponse {
        id: row.id,
        task_id: row.task_id,
        version_number: row.version_number,
        state: wire(&row.state),
        content_state: wire(&row.content_state),
        source_visible: owner,
        environment_version_id: contents.environment_version_id,
        environment_id: detail.environment_id,
        environment_name: detail.environment_name,
        input_instructions: contents.input_instructions.clone(),
        input_example: contents.input_example.clone(),
        input_schema: contents.input_schema.clone(),
        timeout_seconds: contents.timeout_seconds,
        requires_confirmation: contents.requires_confirmation,
        secret_slot_names: contents.secret_slot_names(),
        canonical_digest: row.canonical_digest,
        content_hash: row.content_hash,
        update_available: detail.update_available,
        work_command: if owner {
            contents.work_command.clone()
        } else {
            None
        },
        owner: owner.then(|| OwnerFields {
            source_digest: contents.source_digest(),
            startup_script: contents.startup_script,
            work_script: contents.work_script,
            ordinary_env: contents.ordinary_env,
            secret_slot_declarations: contents.secret_slot_declarations,
            output_policy: contents.output_policy,
            bundle: contents.bundle.map(Into::into),
        }),
        published_at: row.published_at,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

/// `SandboxScriptUploadResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxScriptUploadResponse {
    /// The handle, usable as `work_script_id` or `startup_script_id`.
    pub script_id: Uuid,
    /// Bytes.
    pub byte_size: i64,
    /// `sha256:` of the bytes.
    pub digest: String,
    /// When the handle stops working (24 hours).
    pub expires_at: DateTime<Utc>,
}

/// `SandboxInputPreviewRequest`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxInputPreviewRequest {
    /// Any JSON value.
    #[schema(value_type = Object)]
    pub input: Value,
}

/// How the work is invoked inside the container.
#[derive(Debug, Serialize, ToSchema)]
pub struct RuntimeContract {
    /// The fixed invocation.
    pub invocation: &'static str,
    /// The variable naming the inputs file.
    pub inputs_file_env: &'static str,
    /// The variable naming the output file.
    pub output_file_env: &'static str,
    /// Nominally `/workspace` (not guaranteed; use absolute paths).
    pub working_directory: &'static str,
    /// Network access.
    pub network: &'static str,
    /// The version's real work command (owners only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_command: Option<String>,
}

/// `SandboxInputPreviewResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxInputPreviewResponse {
    /// The exact bytes of the run's inputs file (RFC 8785 canonical JSON).
    pub input_file_content: String,
    /// `sha256:` of those bytes.
    pub input_digest: String,
    /// How the work is invoked.
    pub runtime_contract: RuntimeContract,
    /// Whether the input satisfies the version's schema.
    pub schema_valid: bool,
    /// Why not (up to 20).
    pub schema_errors: Vec<String>,
}
