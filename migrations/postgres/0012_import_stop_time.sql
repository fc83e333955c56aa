-- A staged trial keeps when it was asked to stop: an imported study's partial trials stay partial.
ALTER TABLE import_trials ADD COLUMN stopped_ms BIGINT;
