-- The API version an operation was asked through (`v1` or `v1beta1`): its response names that
-- version's message types, which a client polling from another path (Google's clients poll
-- under /ui/) must get back to unpack them.
ALTER TABLE operations ADD COLUMN api_version TEXT NOT NULL DEFAULT 'v1';
