"""Built-in providers (directory, dataset-copy, controller-map) and the binding registry."""
