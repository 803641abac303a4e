//! Agent tools over the Model Context Protocol (spec section 4, "Agent tools";
//! [docs/agent-tools.md]): an agent runtime calls five tools at `/mcp` with the
//! principal's credentials and a signed turn context; requests that need a human's
//! confirmation become proposals committed with signed receipts in a later turn.

mod body;
mod call;
pub mod receipt;
mod refusal;
mod server;
mod tools;
pub mod turn;

pub use body::{MCP_BODY_LIMIT, check_bounds};
pub use server::{MCP_PATH, service};
