-- Version 4: the highest inventory generation each provider of a site reported, so that a
-- lower one (a restored backup, a stale standby) is noticed. Generations are 0 .. 2**64-1,
-- beyond a signed 64-bit column, so they are stored as 20-digit zero-padded text, whose
-- order is their numeric order.
CREATE TABLE provider_generations (
    site TEXT NOT NULL,
    provider TEXT NOT NULL,
    generation TEXT NOT NULL,
    recorded REAL NOT NULL,
    PRIMARY KEY (site, provider)
);
