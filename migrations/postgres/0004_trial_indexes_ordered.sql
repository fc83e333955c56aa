-- The suggest transaction asks for a study's trials in one state (and of one client) in id
-- order. With `id` last in these indexes the lookup and the order come from the index alone;
-- without it SQLite's planner walked the primary key through every trial of the study (1.8 ms
-- at 2,000 trials, most of a precomputed suggestion's time).
DROP INDEX trials_by_state;
DROP INDEX trials_by_client;
CREATE INDEX trials_by_state ON trials (study_id, state, id);
CREATE INDEX trials_by_client ON trials (study_id, client_id, state, id);
