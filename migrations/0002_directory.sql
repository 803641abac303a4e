-- Read models of the tenant directory, kept by the `directory` projection. Auth reads
-- them on every request.
CREATE TABLE companies
(
    id   uuid PRIMARY KEY,
    name text NOT NULL
);

CREATE TABLE departments
(
    id         uuid PRIMARY KEY,
    company_id uuid NOT NULL,
    name       text NOT NULL
);

CREATE TABLE users
(
    id         uuid PRIMARY KEY,
    company_id uuid    NOT NULL,
    username   text    NOT NULL,
    role       integer NOT NULL
);

CREATE TABLE social_clients
(
    id               uuid PRIMARY KEY,
    company_id       uuid NOT NULL,
    platform         text NOT NULL,
    platform_user_id text NOT NULL,
    display_name     text NOT NULL
);

CREATE TABLE chatrooms
(
    id            uuid PRIMARY KEY,
    company_id    uuid    NOT NULL,
    department_id uuid,
    name          text    NOT NULL,
    archived      boolean NOT NULL
);
CREATE INDEX chatrooms_department ON chatrooms (department_id);

-- A row exists while the user is a member or a manager of the department.
CREATE TABLE department_members
(
    department_id uuid    NOT NULL,
    user_id       uuid    NOT NULL,
    is_member     boolean NOT NULL,
    is_manager    boolean NOT NULL,
    PRIMARY KEY (department_id, user_id)
);
CREATE INDEX department_members_user ON department_members (user_id);

-- A row exists while the principal is a member or (users only) a manager of the room.
CREATE TABLE chatroom_members
(
    chatroom_id uuid    NOT NULL,
    member_kind text    NOT NULL,
    member_id   uuid    NOT NULL,
    is_member   boolean NOT NULL,
    is_manager  boolean NOT NULL,
    PRIMARY KEY (chatroom_id, member_kind, member_id)
);
CREATE INDEX chatroom_members_member ON chatroom_members (member_kind, member_id);

CREATE TABLE api_keys
(
    id            uuid PRIMARY KEY,
    company_id    uuid    NOT NULL,
    owner_kind    text    NOT NULL,
    owner_id      uuid    NOT NULL,
    secret_sha256 text    NOT NULL,
    scope         text    NOT NULL,
    chatroom_ids  uuid[]  NOT NULL,
    domains       text[]  NOT NULL,
    revoked       boolean NOT NULL
);
CREATE UNIQUE INDEX api_keys_secret ON api_keys (secret_sha256);
