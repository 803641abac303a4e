//! One representative event of each event type of environments, their versions,
//! context uploads and owned objects, for the registry.

use super::Catalogued;
use crate::catalog::ResourceProfile;
use crate::environments::archive::ArchiveFormat;
use crate::environments::environment::{
    Environment, EnvironmentCreated, EnvironmentEvent, OwnerKind, OwnerScope,
};
use crate::environments::upload::{ContextUpload, StagedBytes, UploadEvent, UploadInitiated};
use crate::environments::version::{
    BuildFailure, BuildProfile, BuildReport, BuildStatus, EnvironmentVersion, TerminalClass,
    VersionCreated, VersionEvent,
};
use crate::objects::{ObjectEvent, ObjectKind, OwnedObject, StoredObject};
use chrono::{DateTime, Utc};
use uuid::Uuid;

const COMPANY: Uuid = Uuid::from_u128(0xa001);
const ENVIRONMENT: Uuid = Uuid::from_u128(0xe1001);
const VERSION: Uuid = Uuid::from_u128(0xe2001);
const ATTEMPT: Uuid = Uuid::from_u128(0xe3001);
const SESSION: Uuid = Uuid::from_u128(0xe4001);
const CONTEXT: Uuid = Uuid::from_u128(0xe5001);
const REPORT: Uuid = Uuid::from_u128(0xe5002);
const DIGEST: &str = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

fn at(minute: u32) -> DateTime<Utc> {
    format!("2026-01-01T00:{minute:02}:00Z")
        .parse()
        .unwrap_or_default()
}

fn report() -> Option<BuildReport> {
    Some(BuildReport {
        object_id: REPORT,
        total_bytes: 2048,
    })
}

impl Catalogued for Environment {
    fn examples() -> Vec<EnvironmentEvent> {
        use EnvironmentEvent::*;
        vec![
            EnvironmentCreated(self::EnvironmentCreated {
                environment_id: ENVIRONMENT,
                company_id: Some(COMPANY),
                owner_kind: OwnerKind::Company,
                owner_scope: OwnerScope::Company,
                owner_id: Some(COMPANY),
                name: "python".into(),
                description: "Python 3 with numpy".into(),
            }),
            VersionNumberAllocated {
                version_id: VERSION,
                version_number: 1,
            },
            EnvironmentUpdated {
                name: "python-3".into(),
                description: "Python 3.12 with numpy".into(),
            },
            EnvironmentArchived,
        ]
    }
}

impl Catalogued for EnvironmentVersion {
    fn examples() -> Vec<VersionEvent> {
        use VersionEvent::*;
        vec![
            VersionCreated(self::VersionCreated {
                version_id: VERSION,
                environment_id: ENVIRONMENT,
                company_id: Some(COMPANY),
                version_number: 1,
                owned_object_id: Some(CONTEXT),
                source_digest: Some(DIGEST.into()),
                source_ref: Some("v1.0".into()),
                resource_profile: ResourceProfile::Standard,
                runner_release: "2026.1".into(),
            }),
            BuildQueued {
                attempt_id: ATTEMPT,
                attempt_number: 1,
                region: "eu-1".into(),
                profile: BuildProfile::Standard,
                at: at(1),
            },
            BuildClaimed {
                attempt_id: ATTEMPT,
                worker_id: "worker-1".into(),
                at: at(2),
            },
            BuildAdvanced {
                attempt_id: ATTEMPT,
                status: BuildStatus::Building,
                at: at(3),
            },
            BuildFailed {
                attempt_id: ATTEMPT,
                failure: BuildFailure {
                    terminal_class: TerminalClass::PlatformFailed,
                    error_code: "platform_failed".into(),
                    error_detail: Some("worker_lost".into()),
                    stage_code: Some("building".into()),
                },
                report: report(),
                retryable_until: Some(at(4) + chrono::Duration::days(7)),
                at: at(4),
            },
            BuildCancelRequested {
                attempt_id: ATTEMPT,
                at: at(5),
            },
            BuildCancelling {
                attempt_id: ATTEMPT,
                at: at(6),
            },
            BuildCancelled {
                attempt_id: ATTEMPT,
                report: None,
                at: at(7),
                retryable_until: None,
            },
            BuildCompleted {
                attempt_id: ATTEMPT,
                image: "localhost/sandbox-env:e2001-1".into(),
                report: report(),
                at: at(8),
            },
            VersionArchived,
            ImageRemoved {
                image: "localhost/sandbox-env:e2001-1".into(),
                at: at(9),
            },
        ]
    }
}

impl Catalogued for ContextUpload {
    fn examples() -> Vec<UploadEvent> {
        use UploadEvent::*;
        vec![
            UploadInitiated(self::UploadInitiated {
                session_id: SESSION,
                environment_id: ENVIRONMENT,
                company_id: COMPANY,
                declared_bytes: 4096,
                archive_format: ArchiveFormat::TarGz,
                // SHA-256 of "example": the capability itself never enters the log.
                capability_sha256:
                    "50d858e0985ecc7f60418aaf0cc5ab587f42c2570a884095a9e8ccacd0f6545c".into(),
                capability_expires_at: at(15),
                expires_at: at(59),
            }),
            UploadBytesReceived(StagedBytes {
                byte_size: 4096,
                digest: DIGEST.into(),
                staging_key: "staging/e4001".into(),
            }),
            UploadCompletionStarted,
            UploadCompletionFailed {
                error_detail: "dockerfile_missing".into(),
                message: "the archive has no Dockerfile at its root".into(),
            },
            UploadCompleted {
                owned_object_id: CONTEXT,
            },
            UploadAborted,
            UploadExpired,
        ]
    }
}

impl Catalogued for OwnedObject {
    fn examples() -> Vec<ObjectEvent> {
        vec![
            ObjectEvent::ObjectStored(StoredObject {
                object_id: CONTEXT,
                company_id: Some(COMPANY),
                kind: ObjectKind::Context,
                digest: DIGEST.into(),
                byte_size: 4096,
                key: "objects/e5001".into(),
            }),
            ObjectEvent::ObjectDeletionRequested,
            ObjectEvent::ObjectDeleted,
        ]
    }
}
