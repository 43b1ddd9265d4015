-- Version 2: per-site history, for stale-plan checks and the drift report.
CREATE TABLE applied (
    site TEXT PRIMARY KEY,
    digest TEXT NOT NULL,
    revision TEXT,
    applied DOUBLE PRECISION NOT NULL
);

CREATE TABLE drift_history (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    site TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    counts TEXT NOT NULL
);

CREATE INDEX drift_by_site ON drift_history (site, at);
