//! The agent side of the sandbox (spec section 4, "Agent tools"): what an agent's
//! tool calls leave in the log. Today that is the submission proposal a human
//! confirms in a later turn.

pub mod proposal;
