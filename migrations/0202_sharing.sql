-- Read models of share grants and bindings (room enablement), kept by the
-- `sharing` projection. The room menu is read straight from `bindings`.
CREATE TABLE share_grants
(
    id                   uuid PRIMARY KEY,
    company_id           uuid        NOT NULL,
    task_id              uuid        NOT NULL,
    target_kind          text        NOT NULL,
    target_id            uuid        NOT NULL,
    generation           bigint      NOT NULL,
    secret_slot_policies jsonb       NOT NULL,
    state                text        NOT NULL,
    revoke_reason        text,
    granted_by           text        NOT NULL,
    created_at           timestamptz NOT NULL,
    revoked_at           timestamptz
);
CREATE INDEX share_grants_task ON share_grants (task_id, created_at, id);
CREATE INDEX share_grants_live_target ON share_grants (company_id, target_kind, target_id) WHERE state = 'active';

-- One row per binding generation. `state` is `revoked` once the binding was
-- revoked or disabled, its grant revoked, its task archived, or a newer generation
-- of the same room and task enabled; `authority_applicable` is false while the
-- pinned version is archived.
CREATE TABLE bindings
(
    id                   uuid PRIMARY KEY,
    company_id           uuid        NOT NULL,
    chatroom_id          uuid        NOT NULL,
    task_id              uuid        NOT NULL,
    generation           bigint      NOT NULL,
    share_grant_id       uuid        NOT NULL,
    task_version_id      uuid        NOT NULL,
    version_number       bigint      NOT NULL,
    task_version_digest  text        NOT NULL,
    input_schema         jsonb,
    secret_slots         jsonb       NOT NULL,
    task_name            text        NOT NULL,
    state                text        NOT NULL,
    authority_applicable boolean     NOT NULL,
    revoke_reason        text,
    enabled_by           text        NOT NULL,
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL,
    revoked_at           timestamptz
);
CREATE INDEX bindings_menu ON bindings (chatroom_id, task_name, task_id) WHERE state = 'enabled' AND authority_applicable;
CREATE INDEX bindings_room ON bindings (chatroom_id, created_at, id);
CREATE INDEX bindings_task ON bindings (task_id, created_at, id);
CREATE INDEX bindings_grant ON bindings (share_grant_id) WHERE state = 'enabled';
CREATE INDEX bindings_version ON bindings (task_version_id);

-- What the projection needs to know of tasks and versions to keep bindings exact.
CREATE TABLE sharing_tasks
(
    task_id  uuid PRIMARY KEY,
    name     text    NOT NULL,
    archived boolean NOT NULL
);

CREATE TABLE sharing_archived_versions
(
    version_id uuid PRIMARY KEY
);
