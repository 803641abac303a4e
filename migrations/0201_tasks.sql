-- Read models of catalog tasks and task versions.
CREATE TABLE tasks
(
    id            uuid PRIMARY KEY,
    company_id    uuid        NOT NULL,
    owner_scope   text        NOT NULL,
    owner_id      uuid        NOT NULL,
    name          text        NOT NULL,
    description   text        NOT NULL,
    agent_enabled boolean     NOT NULL,
    hidden        boolean     NOT NULL,
    lifecycle     text        NOT NULL,
    version_count bigint      NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);
CREATE INDEX tasks_company ON tasks (company_id, created_at, id);

-- `contents` is the version's whole VersionContents; owner-only fields are removed
-- by the API's borrower view, never by the read model.
CREATE TABLE task_versions
(
    id                     uuid PRIMARY KEY,
    task_id                uuid        NOT NULL,
    company_id             uuid        NOT NULL,
    version_number         bigint      NOT NULL,
    state                  text        NOT NULL,
    content_state          text        NOT NULL,
    environment_version_id uuid        NOT NULL,
    contents               jsonb       NOT NULL,
    canonical_digest       text        NOT NULL,
    content_hash           text        NOT NULL,
    published_at           timestamptz,
    created_at             timestamptz NOT NULL,
    updated_at             timestamptz NOT NULL
);
CREATE INDEX task_versions_task ON task_versions (task_id, version_number);
