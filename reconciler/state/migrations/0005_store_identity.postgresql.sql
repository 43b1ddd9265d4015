-- Version 5: the store's own identity, drawn once, when the store is created or migrated.
-- A saved plan records it, so a plan applied against another store is refused by name.
CREATE TABLE store_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
INSERT INTO store_meta (key, value) VALUES ('store_id', replace(gen_random_uuid()::text, '-', ''));
