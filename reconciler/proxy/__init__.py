"""``xce-proxy``: the long-running process that runs a site's proxied providers on their own
host (issue 24, docs/proxies.md). Everything it does meets the rest of the site in the state
store: the configuration it follows, its leases, published inventories, queued calls and
the refusals of its allowlist."""
