//! The directory file as operators write it: companies with their departments,
//! rooms, users, API keys and social media clients, each named by a reference.

use domain::principal::ApiKeyScope;
use serde::Deserialize;

/// The input file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectoryFile {
    /// Tenants.
    pub companies: Vec<CompanySpec>,
}

/// One company and everything in it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompanySpec {
    /// Reference, unique in the file; the company id derives from it.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Display name.
    pub name: String,
    /// Departments.
    #[serde(default)]
    pub departments: Vec<DepartmentSpec>,
    /// Chatrooms.
    #[serde(default)]
    pub chatrooms: Vec<ChatroomSpec>,
    /// Users.
    #[serde(default)]
    pub users: Vec<UserSpec>,
    /// API keys.
    #[serde(default)]
    pub api_keys: Vec<ApiKeySpec>,
    /// Social media clients.
    #[serde(default)]
    pub social_clients: Vec<SocialClientSpec>,
}

/// A department.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DepartmentSpec {
    /// Reference inside the company.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Display name.
    pub name: String,
}

/// A chatroom.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatroomSpec {
    /// Reference inside the company.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Display name.
    pub name: String,
    /// Owning department's reference.
    #[serde(default)]
    pub department: Option<String>,
    /// Whether the room is archived (not live).
    #[serde(default)]
    pub archived: bool,
}

/// A user.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserSpec {
    /// Reference inside the company.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Login name.
    pub username: String,
    /// Integer role; 3 or higher is a company manager.
    pub role: i32,
    /// Departments the user belongs to.
    #[serde(default)]
    pub departments: Vec<String>,
    /// Departments the user manages.
    #[serde(default)]
    pub manages_departments: Vec<String>,
    /// Chatrooms the user is in.
    #[serde(default)]
    pub chatrooms: Vec<String>,
    /// Chatrooms the user manages.
    #[serde(default)]
    pub manages_chatrooms: Vec<String>,
    /// Chatrooms (among those the user is in) kept as favourites.
    #[serde(default)]
    pub favourite_chatrooms: Vec<String>,
}

/// An API key.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeySpec {
    /// Reference inside the company.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The user the key acts as.
    #[serde(default)]
    pub user: Option<String>,
    /// Or the social media client it acts as.
    #[serde(default)]
    pub social_client: Option<String>,
    /// `full` or `sandbox`.
    pub scope: ApiKeyScope,
    /// Rooms a sandbox key may reach.
    #[serde(default)]
    pub chatrooms: Vec<String>,
    /// Allowed origins; `["*"]` allows any.
    #[serde(default = "any_domain")]
    pub domains: Vec<String>,
}

fn any_domain() -> Vec<String> {
    vec!["*".into()]
}

/// A social media client.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SocialClientSpec {
    /// Reference inside the company.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Messaging platform.
    pub platform: String,
    /// The platform's id for the person.
    pub platform_user_id: String,
    /// Display name (defaults to the platform id).
    #[serde(default)]
    pub display_name: Option<String>,
    /// Rooms the client is in.
    #[serde(default)]
    pub chatrooms: Vec<String>,
    /// Rooms (among those the client is in) kept as favourites.
    #[serde(default)]
    pub favourite_chatrooms: Vec<String>,
}
