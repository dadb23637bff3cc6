-- The refresh pool is complete rows only (the claim's predicate starts with
-- enrichment_status = 'complete'), as the reference's refresh index is: a new entity, always
-- pending, then costs one index entry fewer (six for an actor, seven for a repository), and
-- a row's entry appears when its enrichment completes instead of moving with every retry
-- instant before that.
DROP INDEX actors_refresh;
CREATE INDEX actors_refresh ON actors (fetched_at_ms, next_retry_at_ms)
    WHERE enrichment_status = 'complete';
DROP INDEX repositories_refresh;
CREATE INDEX repositories_refresh ON repositories (fetched_at_ms, next_retry_at_ms)
    WHERE enrichment_status = 'complete';
