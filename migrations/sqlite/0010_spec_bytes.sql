-- The stored size of a study's spec in bytes, so a page of studies is bounded by bytes as a page
-- of trials is, its size known before any spec is read (a spec may be a megabyte).
ALTER TABLE studies ADD COLUMN spec_bytes BIGINT NOT NULL DEFAULT 0;
UPDATE studies SET spec_bytes = LENGTH(CAST(spec AS BLOB));
