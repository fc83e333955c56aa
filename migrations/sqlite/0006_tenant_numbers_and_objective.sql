-- Studies are numbered within their project and location, and operations within their study, so
-- the ids a key holder sees say nothing about other tenants' activity (they were global
-- counters). The internal `id` of each row stays the key the other tables refer to; numbers are
-- never reused, even after a delete (the counters only grow).
CREATE TABLE locations (
    project     TEXT   NOT NULL,
    location    TEXT   NOT NULL,
    next_study  BIGINT NOT NULL,
    CONSTRAINT locations_pkey PRIMARY KEY (project, location)
);
ALTER TABLE studies ADD COLUMN number BIGINT;
UPDATE studies SET number = id;
CREATE UNIQUE INDEX studies_number_key ON studies (project, location, number);
INSERT INTO locations (project, location, next_study)
    SELECT project, location, (SELECT MAX(id) FROM studies) + 1 FROM studies GROUP BY project, location;

ALTER TABLE studies ADD COLUMN next_operation BIGINT NOT NULL DEFAULT 1;
ALTER TABLE operations ADD COLUMN number BIGINT;
UPDATE operations SET number = id;
UPDATE studies SET next_operation = COALESCE((SELECT MAX(id) FROM operations), 0) + 1;
CREATE UNIQUE INDEX operations_number_key ON operations (study_id, number);

-- Finished operations are deleted once older than the server's retention; the sweep reads them
-- by this index.
UPDATE operations SET update_time_ms = create_time_ms WHERE update_time_ms IS NULL;
CREATE INDEX operations_finished ON operations (done, update_time_ms);

-- The objective (the study's first metric) of every measurement in a column of its own, so the
-- early-stopping rule averages it in SQL instead of reading every measurement into the server.
ALTER TABLE studies ADD COLUMN objective_metric TEXT NOT NULL DEFAULT '';
UPDATE studies SET objective_metric = json_extract(spec, '$.metrics[0].id');
ALTER TABLE measurements ADD COLUMN objective DOUBLE PRECISION;
UPDATE measurements SET objective = (
    SELECT j.value FROM studies s, json_each(measurements.metrics) j
    WHERE s.id = measurements.study_id AND j.key = s.objective_metric
);
