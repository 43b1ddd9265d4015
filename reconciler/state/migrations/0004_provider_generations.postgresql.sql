-- Version 4: the highest inventory generation each provider of a site reported, so that a
-- lower one (a restored backup, a stale standby) is noticed. Generations are 0 .. 2**64-1,
-- beyond BIGINT, so they are stored as 20-digit zero-padded text, whose order (in the
-- "C" collation) is their numeric order.
CREATE TABLE provider_generations (
    site TEXT NOT NULL,
    provider TEXT NOT NULL,
    generation TEXT COLLATE "C" NOT NULL,
    recorded DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (site, provider)
);
