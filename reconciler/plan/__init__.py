"""The plan: its data (model), its saved file (file) and its renderings (render)."""
