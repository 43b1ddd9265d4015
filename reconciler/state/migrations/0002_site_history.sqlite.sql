-- Version 2: per-site history, for stale-plan checks and the drift report.
CREATE TABLE applied (
    site TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    revision TEXT,
    applied REAL NOT NULL
);

CREATE TABLE drift_history (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    site TEXT NOT NULL,
    at REAL NOT NULL,
    counts TEXT NOT NULL
);

CREATE INDEX drift_by_site ON drift_history (site, at);
