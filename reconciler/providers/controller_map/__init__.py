"""The embedded controller map: SQLite store, host lifecycle, entries and reporter events."""
