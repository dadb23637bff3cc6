-- PushEvents recorded before GitHub added `payload.before` (2012 and earlier) have none:
-- they are valid events, stored with before_sha NULL instead of quarantined.
ALTER TABLE push_events ALTER COLUMN before_sha DROP NOT NULL;
