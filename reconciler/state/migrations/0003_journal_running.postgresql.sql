-- Version 3: the ops a killed run left in doubt, found without reading the whole journal.
CREATE INDEX journal_running ON journal (run_id) WHERE status = 'running';
