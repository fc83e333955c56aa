-- The service's settings of a study (its trial lease, whether it is reproducible) move out of
-- the spec's JSON into columns of their own: the spec says what the study is (what designers
-- read), the settings how the service runs it. NULL: the server's setting. `reproducible` is 0
-- or 1.
ALTER TABLE studies ADD COLUMN trial_lease_secs DOUBLE PRECISION;
ALTER TABLE studies ADD COLUMN reproducible BIGINT;
UPDATE studies SET
    trial_lease_secs = CAST(CAST(spec AS JSONB) ->> 'trial_lease_secs' AS DOUBLE PRECISION),
    reproducible = CASE CAST(spec AS JSONB) ->> 'reproducible' WHEN 'true' THEN 1 WHEN 'false' THEN 0 END,
    spec = CAST(CAST(spec AS JSONB) - 'trial_lease_secs' - 'reproducible' AS TEXT)
WHERE (CAST(spec AS JSONB) -> 'trial_lease_secs') IS NOT NULL OR (CAST(spec AS JSONB) -> 'reproducible') IS NOT NULL;
UPDATE studies SET spec_bytes = OCTET_LENGTH(spec);
