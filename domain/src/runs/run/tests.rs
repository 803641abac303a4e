//! Given/when/then tests of the run aggregate.

use super::*;
use cqrs_es::test::TestFramework;

fn submitted(hash: &str) -> Box<RunSubmitted> {
    Box::new(RunSubmitted {
        run_id: Uuid::from_u128(1),
        company_id: Uuid::from_u128(2),
        chatroom_id: Uuid::from_u128(3),
        task_id: Uuid::from_u128(4),
        task_version_id: Uuid::from_u128(5),
        share_grant_id: None,
        principal_type: PrincipalType::User,
        principal_id: Uuid::from_u128(6),
        auth_method: AuthMethod::Jwt,
        api_key_id: None,
        submission_source: SubmissionSource::Rest,
        input_digest: "sha256:00".into(),
        input: StoredObject {
            key: "k".into(),
            byte_size: 2,
            digest: "sha256:00".into(),
        },
        timeout_seconds: 60,
        resource_profile: "standard".into(),
        retry_of_run_id: None,
        request_hash: hash.into(),
        slot_sources: None,
        hold: None,
    })
}

fn finish(class: TerminalClass) -> RunCommand {
    RunCommand::Finish(Box::new(RunEnded::bare(class, "x")))
}

#[test]
fn a_repeated_submission_replays_and_a_different_one_conflicts() {
    let given = vec![RunEvent::RunSubmitted(submitted("a"))];
    TestFramework::<Run>::with(())
        .given(given.clone())
        .when(RunCommand::Submit(submitted("a")))
        .then_expect_events(vec![]);
    TestFramework::<Run>::with(())
        .given(given)
        .when(RunCommand::Submit(submitted("b")))
        .then_expect_error(RunError::IdempotencyConflict);
}

#[test]
fn a_queued_cancel_ends_at_once_and_a_started_one_asks_the_worker() {
    TestFramework::<Run>::with(())
        .given(vec![RunEvent::RunSubmitted(submitted("a"))])
        .when(RunCommand::Cancel)
        .then_expect_events(vec![RunEvent::RunFinished(Box::new(RunEnded::bare(
            TerminalClass::Cancelled,
            "cancelled",
        )))]);
    let started = vec![
        RunEvent::RunSubmitted(submitted("a")),
        RunEvent::RunClaimed {
            worker_id: "w".into(),
        },
        RunEvent::RunStarted,
    ];
    TestFramework::<Run>::with(())
        .given(started.clone())
        .when(RunCommand::Cancel)
        .then_expect_events(vec![RunEvent::RunCancelRequested]);
    let mut ended = started;
    ended.push(RunEvent::RunFinished(Box::new(RunEnded::bare(
        TerminalClass::Completed,
        "x",
    ))));
    TestFramework::<Run>::with(())
        .given(ended.clone())
        .when(RunCommand::Cancel)
        .then_expect_error(RunError::NotCancellable);
    TestFramework::<Run>::with(())
        .given(ended)
        .when(finish(TerminalClass::Completed))
        .then_expect_error(RunError::WrongState(RunStatus::Completed));
}

#[test]
fn only_a_started_run_is_reattached_and_only_from_its_worker() {
    let reattach = || RunCommand::Reattach {
        worker_id: "x".into(),
        from: Some("w".into()),
    };
    let claimed = vec![
        RunEvent::RunSubmitted(submitted("a")),
        RunEvent::RunClaimed {
            worker_id: "w".into(),
        },
        RunEvent::RunStarted,
    ];
    TestFramework::<Run>::with(())
        .given(claimed.clone())
        .when(reattach())
        .then_expect_events(vec![RunEvent::RunReattached {
            worker_id: "x".into(),
        }]);
    let mut taken = claimed.clone();
    taken.push(RunEvent::RunReattached {
        worker_id: "y".into(),
    });
    TestFramework::<Run>::with(())
        .given(taken)
        .when(reattach())
        .then_expect_error(RunError::WrongState(RunStatus::Running));
    TestFramework::<Run>::with(())
        .given(vec![RunEvent::RunSubmitted(submitted("a"))])
        .when(reattach())
        .then_expect_error(RunError::WrongState(RunStatus::Queued));
    let mut ended = claimed;
    ended.push(RunEvent::RunFinished(Box::new(RunEnded::bare(
        TerminalClass::Completed,
        "x",
    ))));
    TestFramework::<Run>::with(())
        .given(ended)
        .when(reattach())
        .then_expect_error(RunError::WrongState(RunStatus::Completed));
}

#[test]
fn a_run_is_claimed_once() {
    TestFramework::<Run>::with(())
        .given(vec![
            RunEvent::RunSubmitted(submitted("a")),
            RunEvent::RunClaimed {
                worker_id: "w".into(),
            },
        ])
        .when(RunCommand::Claim {
            worker_id: "x".into(),
        })
        .then_expect_error(RunError::WrongState(RunStatus::Starting));
}

#[test]
fn the_expiry_warning_is_given_once_to_an_ended_run_whose_contents_remain() {
    let at: DateTime<Utc> = "2026-02-05T00:00:00Z".parse().unwrap();
    let warn = || RunCommand::WarnContentExpiring { expires_at: at };
    let queued = vec![RunEvent::RunSubmitted(submitted("a"))];
    TestFramework::<Run>::with(())
        .given(queued.clone())
        .when(warn())
        .then_expect_error(RunError::WrongState(RunStatus::Queued));
    let mut ended = queued;
    ended.push(RunEvent::RunFinished(Box::new(RunEnded::bare(
        TerminalClass::Cancelled,
        "cancelled",
    ))));
    TestFramework::<Run>::with(())
        .given(ended.clone())
        .when(warn())
        .then_expect_events(vec![RunEvent::RunContentExpiring { expires_at: at }]);
    let mut warned = ended.clone();
    warned.push(RunEvent::RunContentExpiring { expires_at: at });
    TestFramework::<Run>::with(())
        .given(warned)
        .when(warn())
        .then_expect_events(vec![]);
    let mut expired = ended;
    expired.push(RunEvent::RunContentExpired);
    TestFramework::<Run>::with(())
        .given(expired)
        .when(warn())
        .then_expect_events(vec![]);
}
