-- Approval rules of custom tables (the custom_tables projection), in set order.
CREATE TABLE custom_table_rules
(
    table_id   uuid    NOT NULL,
    rule_id    text    NOT NULL,
    position   integer NOT NULL,
    definition jsonb   NOT NULL,
    PRIMARY KEY (table_id, rule_id)
);

-- The review module and held callback writes (the review projection).
CREATE TABLE review_groups
(
    id          uuid PRIMARY KEY,
    company_id  uuid        NOT NULL,
    name        text        NOT NULL,
    description text,
    member_ids  uuid[]      NOT NULL,
    created_by  text        NOT NULL,
    created_at  timestamptz NOT NULL
);
CREATE INDEX review_groups_company ON review_groups (company_id, created_at, id);

CREATE TABLE review_templates
(
    id                uuid PRIMARY KEY,
    company_id        uuid        NOT NULL,
    name              text        NOT NULL,
    description       text,
    gates             jsonb       NOT NULL,
    require_signature boolean     NOT NULL,
    created_by        text        NOT NULL,
    created_at        timestamptz NOT NULL
);
CREATE INDEX review_templates_company ON review_templates (company_id, created_at, id);

CREATE TABLE custom_table_staged_changes
(
    id                uuid PRIMARY KEY,
    process_id        uuid        NOT NULL UNIQUE,
    company_id        uuid        NOT NULL,
    table_id          uuid        NOT NULL,
    token_id          uuid        NOT NULL,
    op                text        NOT NULL,
    record_id         uuid        NOT NULL,
    data              jsonb       NOT NULL,
    rule_id           text        NOT NULL,
    rule_label        text        NOT NULL,
    template_id       uuid        NOT NULL,
    gates             jsonb       NOT NULL,
    require_signature boolean     NOT NULL,
    author            text        NOT NULL,
    passed            integer[]   NOT NULL,
    status            text        NOT NULL,
    decided_by        text,
    reason            text,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL
);
CREATE INDEX custom_table_staged_changes_pending_record
    ON custom_table_staged_changes (table_id, record_id) WHERE status = 'pending';
CREATE INDEX custom_table_staged_changes_pending_token
    ON custom_table_staged_changes (token_id) WHERE status = 'pending';
CREATE INDEX custom_table_staged_changes_company ON custom_table_staged_changes (company_id, created_at DESC, id);
