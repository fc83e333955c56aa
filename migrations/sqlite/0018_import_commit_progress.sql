-- A commit runs on after the request that began it (the server answers 202 with its progress
-- when it takes long): how many staged trials have moved so far, and when the last step showed
-- the study. A committed upload is kept until it expires, so a client that asks again (on any
-- replica) is answered with the study rather than a 404.
ALTER TABLE imports ADD COLUMN committed_trials BIGINT NOT NULL DEFAULT 0;
ALTER TABLE imports ADD COLUMN committed_ms BIGINT;
