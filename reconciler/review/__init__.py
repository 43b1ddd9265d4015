"""Plans under review: where a plan was made, reviewed plans, and ``--base`` config diffs."""
