-- Which replica may refit a study's model, until when: a refit runs on one replica at a time
-- (the others serve from the stored state). A lease whose holder died expires by itself.
CREATE TABLE refit_leases (
    study_id    BIGINT NOT NULL,
    holder      TEXT   NOT NULL,   -- the replica's id, random per process
    expires_ms  BIGINT NOT NULL,
    CONSTRAINT refit_leases_pkey PRIMARY KEY (study_id),
    CONSTRAINT refit_leases_study_fkey FOREIGN KEY (study_id) REFERENCES studies (id) ON DELETE CASCADE
);

-- When the trial's client last showed it was alive (a suggest handing it out, a measurement, an
-- early-stopping check or any other change); NULL: not since it started. With a trial lease
-- configured, an ACTIVE trial unseen for longer goes back to REQUESTED for the next client.
ALTER TABLE trials ADD COLUMN last_seen_ms BIGINT;
