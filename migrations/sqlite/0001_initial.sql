-- Studies, trials, their measurements and the long-running operations of the API.
-- Every constraint is named: bo-store's error mapping reads the names.
CREATE TABLE studies (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    project          TEXT    NOT NULL,
    location         TEXT    NOT NULL,
    display_name     TEXT    NOT NULL,
    spec             TEXT    NOT NULL,            -- JSON of bo_core::StudySpec
    state            TEXT    NOT NULL,            -- ACTIVE | INACTIVE | COMPLETED
    inactive_reason  TEXT    NOT NULL DEFAULT '',
    create_time_ms   BIGINT  NOT NULL,
    next_trial_id    BIGINT  NOT NULL DEFAULT 1,  -- trial ids are never reused, even after a delete
    data_version     BIGINT  NOT NULL DEFAULT 0,  -- bumped whenever a trial completes
    CONSTRAINT studies_display_name_key UNIQUE (project, location, display_name)
);

CREATE TABLE trials (
    study_id           BIGINT NOT NULL,
    id                 BIGINT NOT NULL,
    state              TEXT   NOT NULL,           -- REQUESTED | ACTIVE | STOPPING | SUCCEEDED | INFEASIBLE
    parameters         TEXT   NOT NULL,           -- JSON of bo_core::Assignment
    final_measurement  TEXT,                      -- JSON of bo_core::Measurement
    client_id          TEXT   NOT NULL DEFAULT '',
    infeasible_reason  TEXT   NOT NULL DEFAULT '',
    start_time_ms      BIGINT NOT NULL,
    end_time_ms        BIGINT,
    CONSTRAINT trials_pkey PRIMARY KEY (study_id, id),
    CONSTRAINT trials_study_fkey FOREIGN KEY (study_id) REFERENCES studies (id) ON DELETE CASCADE
);
CREATE INDEX trials_by_state ON trials (study_id, state);
CREATE INDEX trials_by_client ON trials (study_id, client_id, state);

CREATE TABLE measurements (
    study_id      BIGINT           NOT NULL,
    trial_id      BIGINT           NOT NULL,
    seq           BIGINT           NOT NULL,      -- order of arrival within the trial
    step_count    BIGINT           NOT NULL,
    elapsed_secs  DOUBLE PRECISION NOT NULL,
    metrics       TEXT             NOT NULL,      -- JSON object metric id -> value
    CONSTRAINT measurements_pkey PRIMARY KEY (study_id, trial_id, seq),
    CONSTRAINT measurements_trial_fkey FOREIGN KEY (study_id, trial_id) REFERENCES trials (study_id, id) ON DELETE CASCADE
);

CREATE TABLE operations (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    study_id        BIGINT NOT NULL,
    trial_id        BIGINT,                        -- set for early-stopping checks
    kind            TEXT   NOT NULL,               -- SUGGEST | EARLY_STOPPING
    client_id       TEXT   NOT NULL DEFAULT '',
    trial_ids       TEXT   NOT NULL DEFAULT '[]',  -- JSON array of the trials a suggest returned
    should_stop     BIGINT NOT NULL DEFAULT 0,
    study_completed BIGINT NOT NULL DEFAULT 0,
    create_time_ms  BIGINT NOT NULL,
    CONSTRAINT operations_study_fkey FOREIGN KEY (study_id) REFERENCES studies (id) ON DELETE CASCADE
);
CREATE INDEX operations_by_study ON operations (study_id, id);
