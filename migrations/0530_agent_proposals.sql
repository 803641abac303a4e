-- Agent submission proposals (`agent_proposals` projection): what an agent asked
-- to run, waiting for a human's confirmation in a later turn.
CREATE TABLE agent_proposals
(
    id                    uuid PRIMARY KEY,
    company_id            uuid        NOT NULL,
    chatroom_id           uuid        NOT NULL,
    principal_kind        text        NOT NULL,
    principal_id          uuid        NOT NULL,
    task_id               uuid        NOT NULL,
    task_version_id       uuid        NOT NULL,
    input_key             text        NOT NULL,
    input_bytes           bigint      NOT NULL,
    input_digest          text        NOT NULL,
    timeout_seconds       bigint      NOT NULL,
    origin_message_id     text        NOT NULL,
    origin_message_seq    bigint      NOT NULL,
    summary               text        NOT NULL,
    requires_confirmation boolean     NOT NULL,
    state                 text        NOT NULL,
    run_id                uuid,
    commit_message_seq    bigint,
    last_error            text,
    created_at            timestamptz NOT NULL,
    expires_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL
);
CREATE INDEX agent_proposals_principal
    ON agent_proposals (company_id, principal_kind, principal_id, created_at DESC);
CREATE INDEX agent_proposals_commit_turn
    ON agent_proposals (chatroom_id, commit_message_seq) WHERE commit_message_seq IS NOT NULL;
