-- Every transaction that locks a study moves its change counter on; each trial written in it
-- records the value, so a reader (the dashboard's live view) asks for the trials changed since
-- the counter it last saw. A deleted trial cannot be listed as changed: the counter at the last
-- delete says a reader from before it must load the study again.
ALTER TABLE studies ADD COLUMN change_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE studies ADD COLUMN reset_seq BIGINT NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN change_seq BIGINT NOT NULL DEFAULT 0;
CREATE INDEX trials_by_change ON trials (study_id, change_seq, id);

-- The final value of the study's objective (its first metric) of every trial in a column of its
-- own, so the studies' overview finds each study's best in SQL.
ALTER TABLE trials ADD COLUMN objective DOUBLE PRECISION;
UPDATE trials t SET objective = (t.final_measurement::jsonb -> 'metrics' ->> s.objective_metric)::double precision
    FROM studies s WHERE s.id = t.study_id AND t.final_measurement IS NOT NULL;

-- When a trial was asked to stop (by its client or the early-stopping rule), so a view of its
-- learning curve can mark the decision after the trial has completed.
ALTER TABLE trials ADD COLUMN stopped_ms BIGINT;
