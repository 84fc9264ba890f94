-- Server processes and their last sign of life (host/src/store/liveness.rs): calls a process
-- left open when it stopped without ending them are closed at the next start, with their
-- latency up to `alive_at`.
CREATE TABLE instances (
    id         TEXT PRIMARY KEY,
    started_at TEXT NOT NULL,
    alive_at   TEXT NOT NULL
);
