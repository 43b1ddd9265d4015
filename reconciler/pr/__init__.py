"""``xce-pr``: the plan posted as one sticky comment on the pull or merge request.

The comment is found again by a hidden marker and updated, so a pull request carries one
plan however often it is pushed. Spoken over GitHub's and GitLab's REST APIs with the
token the CI job already has (docs/pull-requests.md).
"""
