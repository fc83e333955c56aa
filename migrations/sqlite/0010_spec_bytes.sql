-- What a list of studies reads without their specs (a spec may be a megabyte): the spec's stored
-- size in bytes, so a page of studies is bounded by bytes as a page of trials is, and the
-- algorithm and metrics (as in the spec, JSON) the overview shows of each study.
ALTER TABLE studies ADD COLUMN spec_bytes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE studies ADD COLUMN algorithm TEXT NOT NULL DEFAULT '';
ALTER TABLE studies ADD COLUMN metrics TEXT NOT NULL DEFAULT '[]';
UPDATE studies SET spec_bytes = LENGTH(CAST(spec AS BLOB)),
    algorithm = COALESCE(json_extract(spec, '$.algorithm'), ''),
    metrics = COALESCE(json_extract(spec, '$.metrics'), '[]');
