"""The kernel every command uses: problems, codes, secrets, units, names, hostlists, files and
git. It imports nothing else of the project (an import-linter contract keeps it so)."""
