"""``xce-init``: scaffold a new site-config repository."""
