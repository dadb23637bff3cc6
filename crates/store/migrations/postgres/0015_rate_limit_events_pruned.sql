-- How many rate-limit observations retention deleted, per identity and event kind and reason:
-- pruning adds a group's count here in the same statement (or transaction) that deletes its
-- rows, so kept rows plus this count only ever grow and `/metrics` publishes them as a
-- counter (`headroom_rate_limit_events_total`). The columns copy the observation's own
-- (CHECK-constrained vocabularies, empty for none); no instant, no message text.
CREATE TABLE rate_limit_events_pruned (
    host                TEXT    NOT NULL,
    subject             TEXT    NOT NULL,
    event_kind          TEXT    NOT NULL,
    reason              TEXT    NOT NULL,
    wait_reason         TEXT    NOT NULL,
    pruned              BIGINT  NOT NULL CHECK (pruned >= 0),
    PRIMARY KEY (host, subject, event_kind, reason, wait_reason)
);
