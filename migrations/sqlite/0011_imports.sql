-- Uploads of `studies:import` in progress: the document's head (the study, its next trial id,
-- its model state) and its trials, staged in the columns the trials and measurements tables
-- have, so the commit copies them in one statement each. An upload the client abandons expires.
CREATE TABLE imports (
    id              TEXT   NOT NULL,            -- random, 32 hex digits: the upload's name
    project         TEXT   NOT NULL,
    location        TEXT   NOT NULL,
    display_name    TEXT   NOT NULL,            -- the study's, once committed
    head            TEXT   NOT NULL,            -- the document without its trials (the server's JSON)
    trials          BIGINT NOT NULL DEFAULT 0,  -- staged so far
    last_trial_id   BIGINT NOT NULL DEFAULT 0,  -- the next must be greater
    create_time_ms  BIGINT NOT NULL,
    expire_time_ms  BIGINT NOT NULL,
    CONSTRAINT imports_pkey PRIMARY KEY (id)
);
CREATE INDEX imports_by_location ON imports (project, location);
CREATE INDEX imports_by_expiry ON imports (expire_time_ms);

CREATE TABLE import_trials (
    import_id          TEXT   NOT NULL,
    id                 BIGINT NOT NULL,
    state              TEXT   NOT NULL,
    parameters         TEXT   NOT NULL,
    final_measurement  TEXT,
    client_id          TEXT   NOT NULL DEFAULT '',
    infeasible_reason  TEXT   NOT NULL DEFAULT '',
    start_time_ms      BIGINT NOT NULL,
    end_time_ms        BIGINT,
    objective          DOUBLE PRECISION,
    is_unsafe          BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT import_trials_pkey PRIMARY KEY (import_id, id),
    CONSTRAINT import_trials_import_fkey FOREIGN KEY (import_id) REFERENCES imports (id) ON DELETE CASCADE
);

CREATE TABLE import_measurements (
    import_id     TEXT             NOT NULL,
    trial_id      BIGINT           NOT NULL,
    seq           BIGINT           NOT NULL,
    step_count    BIGINT           NOT NULL,
    elapsed_secs  DOUBLE PRECISION NOT NULL,
    metrics       TEXT             NOT NULL,
    objective     DOUBLE PRECISION,
    CONSTRAINT import_measurements_pkey PRIMARY KEY (import_id, trial_id, seq),
    CONSTRAINT import_measurements_trial_fkey FOREIGN KEY (import_id, trial_id) REFERENCES import_trials (import_id, id) ON DELETE CASCADE
);
