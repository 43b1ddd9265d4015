-- Version 9: how many entries of each kind each provider of a site reported at the last
-- trusted read (docs/plan.md, "An inventory that shrank"). A later read that lost a large
-- part of them, beyond what applies removed since (the journal, from `recorded` on), is
-- not trusted: a garbled or partly lost inventory must never remove what runs.
CREATE TABLE inventory_counts (
    site TEXT NOT NULL,
    provider TEXT NOT NULL,
    kind TEXT NOT NULL,
    entries INTEGER NOT NULL CHECK (entries >= 0),
    recorded REAL NOT NULL,
    PRIMARY KEY (site, provider, kind)
);
CREATE INDEX journal_by_finished ON journal (finished)
