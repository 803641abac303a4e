-- A room's jobs list (`NULL`: auto-detected) and the members who keep it among
-- their favourites (listed first by `GET /private/chatrooms/by_job/...`).
ALTER TABLE chatrooms ADD COLUMN jobs text[];
ALTER TABLE chatroom_members ADD COLUMN is_favourite boolean NOT NULL DEFAULT false;
