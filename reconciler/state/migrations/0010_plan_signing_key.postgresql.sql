-- Version 10: the key that signs saved plans (HMAC-SHA256; docs/plan.md, "Plan file").
-- One row, made once per store by the first xce-plan --out or --record that needs it (drawn
-- by the program from the operating system's random source), never printed nor changed:
-- a plan file signed with it was made by someone with access to this store and is
-- unchanged since. Whoever may read this table may sign plans for this store.
CREATE TABLE plan_signing_key (
    name TEXT PRIMARY KEY CHECK (name = 'plan'),
    key_hex TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL
);
