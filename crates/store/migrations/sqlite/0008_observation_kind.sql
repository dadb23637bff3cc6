-- What kind of rate-limit event an observation records, and the governor's own reason when
-- it deferred work before sending: the dashboard and the cooldowns tell pacing from refusals.
ALTER TABLE rate_limit_observations ADD COLUMN event_kind TEXT
    CHECK (event_kind IN ('deferred', 'refused', 'hibernated'));
ALTER TABLE rate_limit_observations ADD COLUMN wait_reason TEXT
    CHECK (wait_reason IN ('exhausted', 'secondary_block', 'in_flight_ceiling', 'local_points', 'content_creation'));
