"""A site's own repository: ``xce-init`` scaffolding, the site's pytest plugin and review data,
config diffs, and the site as it was at a git revision."""
