-- A client's request to stop a live run (POST /v1/chats/:chatId/stream/cancel), made on any
-- instance: the owner hears it as a notification and, should its listener have been away, reads
-- it here when it listens again (host/src/runs/shared.rs).
ALTER TABLE runs ADD COLUMN stop_requested BOOLEAN NOT NULL DEFAULT FALSE;
