-- Safety metrics (a metric with a safetyConfig) are constraints: a trial whose final measurement
-- is on the wrong side of one is unsafe, never the best. The study keeps its safety metrics
-- apart (JSON, as in its spec) so a write marks each trial without reading the whole spec, and
-- each trial says whether it is unsafe, so the overview's best, the history's best so far and
-- the no-progress rule read safe trials only in SQL.
ALTER TABLE studies ADD COLUMN safety_metrics TEXT NOT NULL DEFAULT '[]';
ALTER TABLE trials ADD COLUMN is_unsafe BIGINT NOT NULL DEFAULT 0;
