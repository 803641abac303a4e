//! Company settings (spec section 2, "Company settings"): the tenant-writable run
//! retention, image retention and allowed regions, guarded by `policy_version`.

mod aggregate;
mod policy;

pub use aggregate::{CompanySettings, SettingsCommand, SettingsError, SettingsEvent};
pub use policy::{OperatorLimits, PolicyChanges, PolicyValues};
