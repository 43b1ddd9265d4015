"""The reconciler's commands (``xce-plan``, ``xce-apply``, ``xce-drift`` …): one module each."""
