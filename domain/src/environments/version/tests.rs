//! Given/when/then tests of the version aggregate.

use super::*;
use crate::catalog::ResourceProfile;
use chrono::{DateTime, Utc};
use cqrs_es::test::TestFramework;
use uuid::Uuid;

const ATTEMPT: Uuid = Uuid::from_u128(10);

fn t(days: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000, 0).unwrap() + chrono::Duration::days(days)
}

fn created() -> VersionEvent {
    VersionEvent::VersionCreated(VersionCreated {
        version_id: Uuid::from_u128(1),
        environment_id: Uuid::from_u128(2),
        company_id: Some(Uuid::from_u128(3)),
        version_number: 1,
        owned_object_id: Some(Uuid::from_u128(4)),
        source_digest: None,
        source_ref: None,
        resource_profile: ResourceProfile::Standard,
        runner_release: "5.21.0".into(),
    })
}

fn queued(id: Uuid) -> VersionEvent {
    VersionEvent::BuildQueued {
        attempt_id: id,
        attempt_number: 1,
        region: "onprem".into(),
        profile: BuildProfile::Standard,
        at: t(0),
    }
}

fn queue(id: Uuid) -> VersionCommand {
    VersionCommand::QueueBuild {
        attempt_id: id,
        region: "onprem".into(),
        profile: BuildProfile::Standard,
        now: t(0),
    }
}

fn platform_failed() -> VersionEvent {
    VersionEvent::BuildFailed {
        attempt_id: ATTEMPT,
        failure: BuildFailure {
            terminal_class: TerminalClass::PlatformFailed,
            error_code: "platform_failed".into(),
            error_detail: None,
            stage_code: None,
        },
        report: None,
        retryable_until: Some(t(RETRY_WINDOW_DAYS)),
        at: t(0),
    }
}

#[test]
fn one_nonterminal_attempt_at_a_time() {
    TestFramework::<EnvironmentVersion>::with(())
        .given(vec![created(), queued(ATTEMPT)])
        .when(queue(Uuid::from_u128(11)))
        .then_expect_error(VersionError::NonterminalExists);
}

#[test]
fn only_drafts_start_builds() {
    let ready = VersionEvent::BuildCompleted {
        attempt_id: ATTEMPT,
        image: "img".into(),
        report: None,
        at: t(0),
    };
    TestFramework::<EnvironmentVersion>::with(())
        .given(vec![created(), queued(ATTEMPT), ready])
        .when(queue(Uuid::from_u128(11)))
        .then_expect_error(VersionError::BuildNotEligible(VersionState::Ready));
}

#[test]
fn cancel_is_idempotent_while_in_progress_and_refused_when_terminal() {
    let requested = VersionEvent::BuildCancelRequested {
        attempt_id: ATTEMPT,
        at: t(0),
    };
    let cancel = VersionCommand::RequestCancel {
        attempt_id: ATTEMPT,
        now: t(0),
    };
    TestFramework::<EnvironmentVersion>::with(())
        .given(vec![created(), queued(ATTEMPT)])
        .when(cancel.clone())
        .then_expect_events(vec![requested.clone()]);
    TestFramework::<EnvironmentVersion>::with(())
        .given(vec![created(), queued(ATTEMPT), requested])
        .when(cancel.clone())
        .then_expect_events(vec![]);
    TestFramework::<EnvironmentVersion>::with(())
        .given(vec![created(), queued(ATTEMPT), platform_failed()])
        .when(cancel)
        .then_expect_error(VersionError::NotCancellable);
}

#[test]
fn platform_failures_are_retryable_for_seven_days() {
    let retry = |days| VersionCommand::RetryBuild {
        attempt_id: Uuid::from_u128(11),
        region: "onprem".into(),
        profile: BuildProfile::Standard,
        now: t(days),
    };
    TestFramework::<EnvironmentVersion>::with(())
        .given(vec![created(), queued(ATTEMPT), platform_failed()])
        .when(retry(6))
        .then_expect_events(vec![VersionEvent::BuildQueued {
            attempt_id: Uuid::from_u128(11),
            attempt_number: 2,
            region: "onprem".into(),
            profile: BuildProfile::Standard,
            at: t(6),
        }]);
    TestFramework::<EnvironmentVersion>::with(())
        .given(vec![created(), queued(ATTEMPT), platform_failed()])
        .when(retry(8))
        .then_expect_error(VersionError::RetryWindowExpired);
    TestFramework::<EnvironmentVersion>::with(())
        .given(vec![created()])
        .when(retry(0))
        .then_expect_error(VersionError::RetryNotEligible);
}

#[test]
fn a_cancelled_retry_leaves_the_version_retryable_within_the_same_window() {
    let retry = Uuid::from_u128(11);
    let given = vec![
        created(),
        queued(ATTEMPT),
        platform_failed(),
        VersionEvent::BuildQueued {
            attempt_id: retry,
            attempt_number: 2,
            region: "onprem".into(),
            profile: BuildProfile::Standard,
            at: t(1),
        },
        VersionEvent::BuildCancelRequested {
            attempt_id: retry,
            at: t(1),
        },
    ];
    let finish = VersionCommand::FinishCancel {
        attempt_id: retry,
        report: None,
        now: t(1),
    };
    let cancelled = VersionEvent::BuildCancelled {
        attempt_id: retry,
        report: None,
        at: t(1),
        retryable_until: Some(t(RETRY_WINDOW_DAYS)),
    };
    TestFramework::<EnvironmentVersion>::with(())
        .given(given.clone())
        .when(finish)
        .then_expect_events(vec![cancelled.clone()]);
    let mut after = given;
    after.push(cancelled);
    TestFramework::<EnvironmentVersion>::with(())
        .given(after.clone())
        .when(queue(Uuid::from_u128(12)))
        .then_expect_error(VersionError::BuildNotEligible(
            VersionState::RetryableFailed,
        ));
    TestFramework::<EnvironmentVersion>::with(())
        .given(after)
        .when(VersionCommand::RetryBuild {
            attempt_id: Uuid::from_u128(12),
            region: "onprem".into(),
            profile: BuildProfile::Standard,
            now: t(RETRY_WINDOW_DAYS + 1),
        })
        .then_expect_error(VersionError::RetryWindowExpired);
}

#[test]
fn worker_steps_on_a_cancelled_attempt_are_stale() {
    TestFramework::<EnvironmentVersion>::with(())
        .given(vec![
            created(),
            queued(ATTEMPT),
            VersionEvent::BuildClaimed {
                attempt_id: ATTEMPT,
                worker_id: "w".into(),
                at: t(0),
            },
            VersionEvent::BuildCancelRequested {
                attempt_id: ATTEMPT,
                at: t(0),
            },
        ])
        .when(VersionCommand::Advance {
            attempt_id: ATTEMPT,
            status: BuildStatus::Building,
            now: t(0),
        })
        .then_expect_error(VersionError::StaleStep);
}

#[test]
fn only_an_archived_version_s_image_is_removed_and_only_once() {
    let completed = VersionEvent::BuildCompleted {
        attempt_id: ATTEMPT,
        image: "localhost/sandbox-env/v:a".into(),
        report: None,
        at: t(1),
    };
    let remove = || VersionCommand::RemoveImage { now: t(40) };
    TestFramework::<EnvironmentVersion>::with(())
        .given(vec![created(), queued(ATTEMPT), completed.clone()])
        .when(remove())
        .then_expect_error(VersionError::ImageNotRemovable);
    let archived = vec![
        created(),
        queued(ATTEMPT),
        completed.clone(),
        VersionEvent::VersionArchived,
    ];
    TestFramework::<EnvironmentVersion>::with(())
        .given(archived.clone())
        .when(remove())
        .then_expect_events(vec![VersionEvent::ImageRemoved {
            image: "localhost/sandbox-env/v:a".into(),
            at: t(40),
        }]);
    let mut removed = archived;
    removed.push(VersionEvent::ImageRemoved {
        image: "localhost/sandbox-env/v:a".into(),
        at: t(40),
    });
    TestFramework::<EnvironmentVersion>::with(())
        .given(removed)
        .when(remove())
        .then_expect_error(VersionError::ImageNotRemovable);
}
