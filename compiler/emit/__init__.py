"""Entries of the desired supply map, built from a validated site (one module per family)."""
