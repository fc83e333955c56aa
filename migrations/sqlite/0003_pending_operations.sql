-- Suggest operations that answer `done: false` while the worker pool fits the study's model, and
-- are finished later: the request they stand for, whether they are finished, and the error a
-- failed one reports. Operations stored before this migration were all finished.
ALTER TABLE operations ADD COLUMN done BIGINT NOT NULL DEFAULT 1;
ALTER TABLE operations ADD COLUMN suggestion_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE operations ADD COLUMN error_message TEXT;
ALTER TABLE operations ADD COLUMN update_time_ms BIGINT;
CREATE INDEX operations_pending ON operations (study_id, client_id) WHERE done = 0;
