"""xce-gitops reconciler: live supply map from providers, plan, apply, drift."""
