-- An open study's space grows as trials ask for parameters (bo extension, `openSearchSpace`):
-- the study row counts its revisions (the spec's JSON holds the same number; growing compares
-- and sets this column in one statement, so two workers never both grow from one revision),
-- each trial records the revision of the space its parameters were drawn from, and a stored
-- model the revision it was fitted for (a fit of another revision is neither adopted nor
-- warm-started). A trial's labels (bo extension: a client's own names for it, such as Optuna's
-- trial number) are a JSON object; NULL when it has none. A staged import trial keeps both, and a
-- pending suggest the labels its new trials will take. A study's seed (`algorithmConfig.seed`, a
-- service setting like its trial lease) replaces the one its number and name give; NULL: those.
ALTER TABLE studies ADD COLUMN space_revision BIGINT NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN space_revision BIGINT NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN labels TEXT;
ALTER TABLE import_trials ADD COLUMN space_revision BIGINT NOT NULL DEFAULT 0;
ALTER TABLE import_trials ADD COLUMN labels TEXT;
ALTER TABLE models ADD COLUMN space_revision BIGINT NOT NULL DEFAULT 0;
ALTER TABLE operations ADD COLUMN labels TEXT;
ALTER TABLE studies ADD COLUMN seed BIGINT;
