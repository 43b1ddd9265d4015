"""Pydantic models of the site-config language (v1), one module per section."""
