"""Drift reports: what differs between the site-config and live supply (docs/drift.md)."""
