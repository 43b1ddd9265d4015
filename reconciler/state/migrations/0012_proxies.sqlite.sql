-- Version 12: proxies (issue 24; docs/proxies.md). applied_config keeps each configuration an
-- apply made current (bindings.json and the proxies' scoped allowlists), numbered per site;
-- proxies follow the latest. provider_leases holds one lease per provider of a site: which
-- proxy instance serves it, under which fencing epoch (drawn from the site's apply epochs),
-- until when. published_inventories / published_entries are each provider's inventory as its
-- active proxy last read it; proxy_calls the change calls an apply queued for a proxy;
-- proxy_refusals the calls a proxy's allowlist refused; proxy_instances who runs where.
CREATE TABLE applied_config (
    site TEXT NOT NULL,
    seq INTEGER NOT NULL CHECK (seq >= 1),
    digest TEXT NOT NULL,
    bindings TEXT NOT NULL,
    allowlists TEXT NOT NULL,
    applied REAL NOT NULL,
    applied_by TEXT NOT NULL,
    PRIMARY KEY (site, seq)
);

CREATE TABLE provider_leases (
    site TEXT NOT NULL,
    provider TEXT NOT NULL,
    holder TEXT NOT NULL,
    instance TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    acquired REAL NOT NULL,
    expires REAL NOT NULL,
    PRIMARY KEY (site, provider)
);

CREATE TABLE published_inventories (
    site TEXT NOT NULL,
    provider TEXT NOT NULL,
    proxy TEXT NOT NULL,
    instance TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    generation TEXT,
    complete INTEGER NOT NULL CHECK (complete IN (0, 1)),
    session TEXT,
    info TEXT,
    published REAL NOT NULL,
    entry_count INTEGER NOT NULL CHECK (entry_count >= 0),
    config_seq INTEGER NOT NULL,
    error TEXT,
    -- when a change call's reply was written after the last publication (NULL: none since)
    changed REAL,
    PRIMARY KEY (site, provider)
);

CREATE TABLE published_entries (
    site TEXT NOT NULL,
    provider TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    doc TEXT NOT NULL,
    PRIMARY KEY (site, provider, entry_id)
);

CREATE TABLE proxy_calls (
    call_id INTEGER PRIMARY KEY AUTOINCREMENT,
    site TEXT NOT NULL,
    provider TEXT NOT NULL,
    op_id TEXT NOT NULL,
    request TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('queued', 'taken', 'done')),
    queued REAL NOT NULL,
    taken_by TEXT,
    taken_epoch INTEGER,
    taken REAL,
    reply TEXT,
    ok INTEGER CHECK (ok IN (0, 1)),
    done REAL,
    UNIQUE (site, provider, op_id)
);

CREATE INDEX proxy_calls_to_take ON proxy_calls (site, provider, status, call_id);

CREATE TABLE proxy_refusals (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    site TEXT NOT NULL,
    proxy TEXT NOT NULL,
    provider TEXT NOT NULL,
    opcode TEXT NOT NULL,
    rule TEXT NOT NULL,
    op_id TEXT NOT NULL,
    at REAL NOT NULL
);

CREATE INDEX proxy_refusals_by_site ON proxy_refusals (site, id);

CREATE TABLE proxy_instances (
    site TEXT NOT NULL,
    proxy TEXT NOT NULL,
    instance TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started REAL NOT NULL,
    seen REAL NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (site, proxy, instance)
)
