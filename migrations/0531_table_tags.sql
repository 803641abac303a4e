-- Table tags (`table_tags` projection): named, coloured labels of a scope and the
-- tables carrying them (`{scope_mount}/table-tags`).
CREATE TABLE custom_table_tags
(
    id          uuid PRIMARY KEY,
    company_id  uuid        NOT NULL,
    scope_kind  text        NOT NULL,
    scope_id    uuid        NOT NULL,
    name        text        NOT NULL,
    description text,
    color       text,
    system      text,
    created_by  text        NOT NULL,
    created_at  timestamptz NOT NULL
);
CREATE INDEX custom_table_tags_scope ON custom_table_tags (company_id, scope_kind, scope_id, created_at, id);

CREATE TABLE custom_table_tag_tables
(
    tag_id      uuid        NOT NULL,
    table_id    uuid        NOT NULL,
    attached_at timestamptz NOT NULL,
    PRIMARY KEY (tag_id, table_id)
);
CREATE INDEX custom_table_tag_tables_table ON custom_table_tag_tables (table_id);
