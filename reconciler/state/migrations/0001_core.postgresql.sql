-- Version 1: what a locked, journaled apply needs.
CREATE TABLE locks (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    host TEXT NOT NULL,
    job_id TEXT,
    acquired DOUBLE PRECISION NOT NULL,
    expires DOUBLE PRECISION NOT NULL
);

CREATE TABLE epochs (
    name TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);

CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    plan_digest TEXT NOT NULL,
    holder TEXT NOT NULL,
    started DOUBLE PRECISION NOT NULL,
    finished DOUBLE PRECISION,
    status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'interrupted'))
);

CREATE INDEX runs_by_digest ON runs (plan_digest, started);

CREATE TABLE journal (
    op_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    action TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    provider TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed', 'skipped')),
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    started DOUBLE PRECISION,
    finished DOUBLE PRECISION,
    result TEXT
);

CREATE INDEX journal_by_run ON journal (run_id);
