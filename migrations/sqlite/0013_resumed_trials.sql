-- Successive halving with resumption hands a paused trial out again as a new trial that goes on
-- from it: the new trial names the paused one and the position of the last measurement it took
-- over (it pauses again only at a rung past it). A staged trial keeps both, so an imported study's
-- chains stay chains.
ALTER TABLE trials ADD COLUMN resumed_from BIGINT;
ALTER TABLE trials ADD COLUMN resumed_at DOUBLE PRECISION;
ALTER TABLE import_trials ADD COLUMN resumed_from BIGINT;
ALTER TABLE import_trials ADD COLUMN resumed_at DOUBLE PRECISION;
