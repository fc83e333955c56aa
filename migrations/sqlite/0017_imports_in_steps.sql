-- An upload is committed in steps (a few thousand trials per transaction, so no other
-- tenant's write waits for all of it): its study is created first, hidden (project ''), and
-- named here; the staged trials move into it a chunk at a time; the last step shows it.
ALTER TABLE imports ADD COLUMN study_id BIGINT;
