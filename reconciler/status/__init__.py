"""``xce-status``: a site's state as the state store holds it, read only (docs/status.md)."""
