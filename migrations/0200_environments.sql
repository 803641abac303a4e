-- Read models of environments, versions, build attempts, context uploads, owned
-- objects and notifications.
CREATE TABLE environments
(
    id             uuid PRIMARY KEY,
    company_id     uuid,
    owner_kind     text        NOT NULL,
    owner_scope    text        NOT NULL,
    owner_id       uuid,
    name           text        NOT NULL,
    description    text        NOT NULL,
    lifecycle      text        NOT NULL,
    security_state text        NOT NULL,
    version_count  bigint      NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL
);
CREATE INDEX environments_company ON environments (company_id, created_at, id);

CREATE TABLE environment_versions
(
    id               uuid PRIMARY KEY,
    environment_id   uuid        NOT NULL,
    company_id       uuid,
    version_number   bigint      NOT NULL,
    state            text        NOT NULL,
    security_state   text        NOT NULL,
    resource_profile text        NOT NULL,
    owned_object_id  uuid,
    source_digest    text,
    source_ref       text,
    image            text,
    runner_release   text        NOT NULL,
    ready_at         timestamptz,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
CREATE INDEX environment_versions_environment ON environment_versions (environment_id, version_number);
CREATE INDEX environment_versions_object ON environment_versions (owned_object_id);
CREATE INDEX environment_versions_retained ON environment_versions (company_id) WHERE state <> 'archived';

CREATE TABLE build_attempts
(
    id                 uuid PRIMARY KEY,
    version_id         uuid        NOT NULL,
    environment_id     uuid        NOT NULL,
    company_id         uuid,
    attempt_number     bigint      NOT NULL,
    status             text        NOT NULL,
    terminal_class     text,
    stage_code         text,
    error_code         text,
    error_detail       text,
    build_region       text        NOT NULL,
    build_profile      text        NOT NULL,
    report_object_id   uuid,
    report_total_bytes bigint,
    retryable_until    timestamptz,
    worker_id          text,
    queued_at          timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL
);
CREATE INDEX build_attempts_version ON build_attempts (version_id, attempt_number);
CREATE INDEX build_attempts_open ON build_attempts (status, queued_at)
    WHERE status NOT IN ('completed', 'customer_failed', 'platform_failed', 'cancelled');

CREATE TABLE context_uploads
(
    id                    uuid PRIMARY KEY,
    environment_id        uuid        NOT NULL,
    company_id            uuid        NOT NULL,
    state                 text        NOT NULL,
    declared_bytes        bigint      NOT NULL,
    archive_format        text        NOT NULL,
    received_bytes        bigint,
    digest                text,
    owned_object_id       uuid,
    error_detail          text,
    created_at            timestamptz NOT NULL,
    expires_at            timestamptz NOT NULL,
    capability_expires_at timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL
);
CREATE INDEX context_uploads_environment ON context_uploads (environment_id, created_at, id);
CREATE INDEX context_uploads_live ON context_uploads (company_id, created_at) WHERE state IN ('uploading', 'completing');

CREATE TABLE owned_objects
(
    id             uuid PRIMARY KEY,
    company_id     uuid,
    kind           text        NOT NULL,
    digest         text        NOT NULL,
    byte_size      bigint      NOT NULL,
    key            text        NOT NULL,
    deletion_state text        NOT NULL,
    created_at     timestamptz NOT NULL
);

-- Notifications are stored now and delivered by the notification center later.
-- `recipients` names scopes (the environment's owner scope, the company managers).
CREATE TABLE notifications
(
    id         uuid PRIMARY KEY,
    company_id uuid,
    kind       text        NOT NULL,
    recipients jsonb       NOT NULL,
    payload    jsonb       NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX notifications_company ON notifications (company_id, created_at);

-- The owner of each environment, as the notifications projection needs it.
CREATE TABLE notification_environment_owners
(
    environment_id uuid PRIMARY KEY,
    company_id     uuid,
    owner_scope    text NOT NULL,
    owner_id       uuid,
    name           text NOT NULL
);

-- The environment of each version, as the notifications projection needs it.
CREATE TABLE notification_versions
(
    version_id     uuid PRIMARY KEY,
    environment_id uuid NOT NULL
);

-- Liveness of background workers (operational state, not domain state): a build or
-- run claimed by a worker whose heartbeat is stale is recovered.
CREATE TABLE worker_heartbeats
(
    worker_id text PRIMARY KEY,
    kind      text        NOT NULL,
    seen_at   timestamptz NOT NULL
);
