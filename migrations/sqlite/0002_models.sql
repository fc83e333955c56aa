-- The fitted state of each study's designer (hyperparameters, learned structure), so a restart or
-- another replica warm-starts the next fit instead of fitting from scratch.
CREATE TABLE models (
    study_id       BIGINT NOT NULL,
    data_version   BIGINT NOT NULL,   -- the study's data_version the state was fitted on
    state          TEXT   NOT NULL,   -- JSON of bo_core::ModelState
    fitted_at_ms   BIGINT NOT NULL,
    CONSTRAINT models_pkey PRIMARY KEY (study_id),
    CONSTRAINT models_study_fkey FOREIGN KEY (study_id) REFERENCES studies (id) ON DELETE CASCADE
);
