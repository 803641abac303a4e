//! The public catalogs: deployment providers, regions and resource profiles.
//!
//! The region set a deployment shows depends on its provider: an on-prem deployment
//! has exactly one region, `onprem` at tier 3; a managed deployment has the cloud
//! regions (tier 1 preferred, tier 2 overflow).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The deployment provider (`SANDBOX_PROVIDER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// One fixed-capacity region with queue caps.
    Onprem,
    /// Cloud regions.
    Managed,
}

impl FromStr for Provider {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "onprem" => Ok(Self::Onprem),
            "managed" => Ok(Self::Managed),
            other => Err(format!(
                "unknown provider `{other}` (expected onprem or managed)"
            )),
        }
    }
}

/// A region of the catalog (spec `SandboxRegionCode` plus display data).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// The `SandboxRegionCode`.
    pub code: &'static str,
    /// Human name.
    pub display_name: &'static str,
    /// Where it is.
    pub location: &'static str,
    /// 1 preferred, 2 overflow, 3 on-prem.
    pub tier: u8,
}

/// Every region code the API accepts as an enumeration value, in catalog order.
pub const REGIONS: &[Region] = &[
    Region {
        code: "asia-east1",
        display_name: "Taiwan",
        location: "Changhua County, Taiwan",
        tier: 1,
    },
    Region {
        code: "asia-northeast1",
        display_name: "Tokyo",
        location: "Tokyo, Japan",
        tier: 1,
    },
    Region {
        code: "asia-northeast2",
        display_name: "Osaka",
        location: "Osaka, Japan",
        tier: 2,
    },
    Region {
        code: "asia-south1",
        display_name: "Mumbai",
        location: "Mumbai, India",
        tier: 2,
    },
    Region {
        code: "asia-southeast3",
        display_name: "Bangkok",
        location: "Bangkok, Thailand",
        tier: 2,
    },
    Region {
        code: "asia-east2",
        display_name: "Hong Kong",
        location: "Hong Kong",
        tier: 2,
    },
    Region {
        code: "asia-northeast3",
        display_name: "Seoul",
        location: "Seoul, South Korea",
        tier: 2,
    },
    Region {
        code: "asia-southeast1",
        display_name: "Singapore",
        location: "Jurong West, Singapore",
        tier: 2,
    },
    Region {
        code: "asia-southeast2",
        display_name: "Jakarta",
        location: "Jakarta, Indonesia",
        tier: 2,
    },
    Region {
        code: "asia-south2",
        display_name: "Delhi",
        location: "Delhi, India",
        tier: 2,
    },
    Region {
        code: "onprem",
        display_name: "On-premises",
        location: "Operator data centre",
        tier: 3,
    },
];

/// The on-prem region code.
pub const ONPREM_REGION: &str = "onprem";

/// Looks a region up by code.
pub fn region(code: &str) -> Option<&'static Region> {
    REGIONS.iter().find(|r| r.code == code)
}

/// The regions a deployment of this provider offers.
pub fn regions_for(provider: Provider) -> Vec<&'static Region> {
    REGIONS
        .iter()
        .filter(|r| match provider {
            Provider::Onprem => r.code == ONPREM_REGION,
            Provider::Managed => r.code != ONPREM_REGION,
        })
        .collect()
}

/// The default build region of a provider.
pub fn default_build_region(provider: Provider) -> &'static str {
    match provider {
        Provider::Onprem => ONPREM_REGION,
        Provider::Managed => "asia-east1",
    }
}

/// A resource profile (spec `SandboxResourceProfile`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceProfile {
    /// 1 vCPU, the default.
    Standard,
    /// 2 vCPU.
    Performance,
    /// 4 vCPU.
    Large,
    /// 8 vCPU, operator only.
    Xlarge,
}

/// The sizes of one resource profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfileSpec {
    /// Which profile.
    pub id: ResourceProfile,
    /// Human name.
    pub display_name: &'static str,
    /// Virtual CPUs.
    pub vcpu: u32,
    /// Memory the provider allocates to the job.
    pub provider_memory_mib: u32,
    /// Memory the customer's work may use.
    pub customer_memory_mib: u32,
    /// Scratch space under `/workspace`.
    pub workspace_mib: u32,
    /// Whether tenants may choose it.
    pub tenant_selectable: bool,
    /// Whether it is the default.
    pub is_default: bool,
}

/// The profile table of spec section 2.
pub const PROFILES: &[ProfileSpec] = &[
    ProfileSpec {
        id: ResourceProfile::Standard,
        display_name: "Standard",
        vcpu: 1,
        provider_memory_mib: 2048,
        customer_memory_mib: 1280,
        workspace_mib: 512,
        tenant_selectable: true,
        is_default: true,
    },
    ProfileSpec {
        id: ResourceProfile::Performance,
        display_name: "Performance",
        vcpu: 2,
        provider_memory_mib: 4096,
        customer_memory_mib: 2560,
        workspace_mib: 1024,
        tenant_selectable: true,
        is_default: false,
    },
    ProfileSpec {
        id: ResourceProfile::Large,
        display_name: "Large",
        vcpu: 4,
        provider_memory_mib: 8192,
        customer_memory_mib: 5120,
        workspace_mib: 2048,
        tenant_selectable: true,
        is_default: false,
    },
    ProfileSpec {
        id: ResourceProfile::Xlarge,
        display_name: "Extra large",
        vcpu: 8,
        provider_memory_mib: 16384,
        customer_memory_mib: 10240,
        workspace_mib: 4096,
        tenant_selectable: false,
        is_default: false,
    },
];

impl ResourceProfile {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Standard => "standard",
            Self::Performance => "performance",
            Self::Large => "large",
            Self::Xlarge => "xlarge",
        }
    }

    /// The sizes of this profile.
    pub fn spec(self) -> &'static ProfileSpec {
        PROFILES
            .iter()
            .find(|p| p.id == self)
            .expect("every profile is in the table")
    }
}

impl fmt::Display for ResourceProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn onprem_shows_exactly_onprem_at_tier_3() {
        let regions = regions_for(Provider::Onprem);
        assert_eq!(regions.len(), 1);
        assert_eq!((regions[0].code, regions[0].tier), ("onprem", 3));
    }

    #[test]
    fn managed_shows_every_cloud_region_and_no_onprem() {
        let regions = regions_for(Provider::Managed);
        assert_eq!(regions.len(), 10);
        assert!(
            regions
                .iter()
                .all(|r| r.code != "onprem" && (1..=2).contains(&r.tier))
        );
    }

    #[test]
    fn one_default_profile_and_xlarge_is_operator_only() {
        assert_eq!(PROFILES.iter().filter(|p| p.is_default).count(), 1);
        assert!(!ResourceProfile::Xlarge.spec().tenant_selectable);
        assert_eq!(ResourceProfile::Standard.spec().customer_memory_mib, 1280);
    }
}
