-- Version 11: the branch (pull request) a plan recorded for review was made for
-- (xce-plan --record --branch, default the checkout's git branch; '' when none is known).
-- Recording a plan supersedes the older pending plans of the same site and branch, so a
-- second push to a pull request leaves one pending plan, not two; a plan of no branch
-- supersedes nothing (docs/apply.md, "Reviewed plans").
ALTER TABLE reviewed_plans ADD COLUMN branch TEXT NOT NULL DEFAULT ''
