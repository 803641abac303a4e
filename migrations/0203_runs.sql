-- Read models of runs, their artifact files and their public links, kept by the
-- `runs` projection.
CREATE TABLE runs
(
    id                  uuid PRIMARY KEY,
    company_id          uuid        NOT NULL,
    chatroom_id         uuid        NOT NULL,
    task_id             uuid        NOT NULL,
    task_version_id     uuid        NOT NULL,
    share_grant_id      uuid,
    principal_type      text        NOT NULL,
    principal_id        uuid        NOT NULL,
    auth_method         text        NOT NULL,
    api_key_id          uuid,
    submission_source   text        NOT NULL,
    input_digest        text        NOT NULL,
    input_key           text        NOT NULL,
    input_bytes         bigint      NOT NULL,
    timeout_seconds     bigint      NOT NULL,
    resource_profile    text        NOT NULL,
    retry_of_run_id     uuid,
    status              text        NOT NULL,
    worker_id           text,
    error_code          text,
    exit_code           integer,
    log_key             text,
    log_bytes           bigint,
    log_digest          text,
    output_key          text,
    output_bytes        bigint,
    output_digest       text,
    bundle_key          text,
    bundle_bytes        bigint,
    bundle_digest       text,
    artifact_count      integer     NOT NULL,
    content_state       text        NOT NULL,
    queued_at           timestamptz NOT NULL,
    started_at          timestamptz,
    cancel_requested_at timestamptz,
    terminal_at         timestamptz,
    updated_at          timestamptz NOT NULL
);
CREATE INDEX runs_room ON runs (chatroom_id, queued_at DESC, id DESC);
CREATE INDEX runs_company_queued ON runs (company_id, queued_at, id) WHERE status = 'queued';
CREATE INDEX runs_active ON runs (status) WHERE status IN ('queued', 'starting', 'running', 'cancel_requested');
CREATE INDEX runs_task ON runs (task_id, queued_at DESC, id DESC);
CREATE INDEX runs_retention ON runs (terminal_at) WHERE content_state = 'active' AND terminal_at IS NOT NULL;

-- One row per file of a run's artifact bundle; `byte_offset` is where its bytes start
-- in the bundle.
CREATE TABLE run_artifacts
(
    id                    uuid PRIMARY KEY,
    run_id                uuid   NOT NULL,
    company_id            uuid   NOT NULL,
    relative_path         text   NOT NULL,
    byte_offset           bigint NOT NULL,
    byte_size             bigint NOT NULL,
    digest                text   NOT NULL,
    declared_content_type text   NOT NULL
);
CREATE INDEX run_artifacts_run ON run_artifacts (run_id, relative_path);

-- One row per public link generation; the token is derived from the id, never stored.
CREATE TABLE public_links
(
    id          uuid PRIMARY KEY,
    run_id      uuid        NOT NULL,
    company_id  uuid        NOT NULL,
    object      text        NOT NULL,
    artifact_id uuid,
    generation  bigint      NOT NULL,
    revoked     boolean     NOT NULL,
    created_at  timestamptz NOT NULL,
    revoked_at  timestamptz
);
CREATE INDEX public_links_object ON public_links (run_id, object, artifact_id) WHERE NOT revoked;
