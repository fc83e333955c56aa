-- The service's settings of a study (its trial lease, whether it is reproducible) move out of
-- the spec's JSON into columns of their own: the spec says what the study is (what designers
-- read), the settings how the service runs it. NULL: the server's setting. `reproducible` is 0
-- or 1.
ALTER TABLE studies ADD COLUMN trial_lease_secs DOUBLE PRECISION;
ALTER TABLE studies ADD COLUMN reproducible BIGINT;
UPDATE studies SET
    trial_lease_secs = json_extract(spec, '$.trial_lease_secs'),
    reproducible = json_extract(spec, '$.reproducible'),
    spec = json_remove(spec, '$.trial_lease_secs', '$.reproducible')
WHERE json_type(spec, '$.trial_lease_secs') IS NOT NULL OR json_type(spec, '$.reproducible') IS NOT NULL;
UPDATE studies SET spec_bytes = LENGTH(CAST(spec AS BLOB));
