-- Counters a study increments stay far below overflow (2^53, bo-core's MAX_COUNTER). An import
-- before that bound could store a data version of 2^63-1, and every completion then failed
-- (bigint out of range). Such a study is given data version 1 (its model, fitted on another
-- version, is refitted).
UPDATE studies SET data_version = 1 WHERE data_version < 0 OR data_version > 9007199254740992;
UPDATE models SET data_version = 0 WHERE data_version < 0 OR data_version > 9007199254740992;
