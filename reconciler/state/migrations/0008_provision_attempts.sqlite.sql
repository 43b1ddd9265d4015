-- Version 8: the provisioning attempts whose host never joined (P6; docs/plan.md,
-- "Provisioning backoff"). One row per site and instance entry: how many attempts in a row
-- failed, when the last one was recorded, the template they were made from, and which
-- instance was released last (its spec.since, or the digest of its entry), so that
-- recording the same release again changes nothing. The apply writes a row when it starts
-- releasing an instance whose host never joined, and deletes it once the host joined.
CREATE TABLE provision_attempts (
    site TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    failures INTEGER NOT NULL CHECK (failures >= 1),
    failed_at REAL NOT NULL,
    template TEXT NOT NULL,
    instance TEXT NOT NULL,
    PRIMARY KEY (site, entry_id)
);
