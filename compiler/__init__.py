"""xce-gitops compiler: site-config YAML to a validated desired supply map."""

__version__ = "0.1.0"
