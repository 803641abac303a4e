//! Request middleware shared by the routers.

pub mod body_limit;
pub mod kill_switch;
pub mod observe;
