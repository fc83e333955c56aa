-- A large study's trials as the trial mirror last packed them (bo_core::PackedTrials' stored
-- form, JSON) and the change cursor they were read up to: a server that restarts loads them and
-- reads only the trials changed since, instead of decoding every trial's parameters again. A
-- cursor from before a trial was deleted is caught by the study's reset_seq like any reader's.
CREATE TABLE trial_snapshots (
    study_id        BIGINT NOT NULL,
    cursor_seq      BIGINT NOT NULL,
    cursor_trial_id BIGINT NOT NULL,
    body            TEXT   NOT NULL,
    saved_ms        BIGINT NOT NULL,
    CONSTRAINT trial_snapshots_pkey PRIMARY KEY (study_id),
    CONSTRAINT trial_snapshots_study_fkey FOREIGN KEY (study_id) REFERENCES studies (id) ON DELETE CASCADE
);
