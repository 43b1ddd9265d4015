-- Version 6: the drift ledger (docs/drift.md, "The drift ledger"). drift_history keeps one
-- row per recorded xce-drift run (its id orders the runs of a site); drift_ledger one row
-- per drift still open, or resolved and not yet notified; drift_sites what was last
-- notified and digested per site (its row also serialises the runs of one site).
CREATE TABLE drift_sites (
    site TEXT PRIMARY KEY,
    last_run BIGINT NOT NULL,
    last_notified REAL,
    last_digest REAL
);

CREATE TABLE drift_ledger (
    site TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    subject TEXT NOT NULL,
    detail TEXT NOT NULL,
    first_seen REAL NOT NULL,
    last_seen REAL NOT NULL,
    seen_run BIGINT NOT NULL,
    notified_at REAL,
    resolved_at REAL,
    PRIMARY KEY (site, fingerprint)
);

CREATE INDEX drift_ledger_runs ON drift_ledger (site, seen_run);
