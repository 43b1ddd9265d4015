"""Semantic checks over the whole site, one module per concern, all reporting into Problems."""
