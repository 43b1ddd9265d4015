"""Reading site-config YAML as YAML 1.2 reads it: fast, nesting bounded, lines found on demand."""
