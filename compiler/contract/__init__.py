"""What ``build/*.json`` holds: written by the compiler, read by the reconciler, typed once here."""
