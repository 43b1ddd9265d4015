-- Version 7: the plans recorded for review (docs/apply.md, "Reviewed plans"). One row per
-- site, desired digest and git commit of the site ('' when it is not in git); recording the
-- same key again replaces the plan. plan holds the plan file's bytes as xce-plan --out
-- writes them (a saved plan holds no secrets). xce-apply --reviewed applies the newest
-- pending plan of the digest the site compiles to, and marks it applied; the other pending
-- plans of that digest are then superseded.
CREATE TABLE reviewed_plans (
    site TEXT NOT NULL,
    desired_digest TEXT NOT NULL,
    git_commit TEXT NOT NULL,
    recorded_at REAL NOT NULL,
    plan BLOB NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'applied', 'superseded')),
    applied_at REAL,
    applied_commit TEXT,
    PRIMARY KEY (site, desired_digest, git_commit)
);

CREATE INDEX reviewed_plans_pending ON reviewed_plans (site, recorded_at) WHERE status = 'pending';
