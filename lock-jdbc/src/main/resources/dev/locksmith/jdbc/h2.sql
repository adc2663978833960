-- Lease table of lock-jdbc for H2. ${table} is the configured table name.
-- One row per lock name, kept after release until unused for purge-after; a reserved floor row
-- keeps the highest fence deleted, and new rows start above it, so no fence ever goes back.
-- Times are milliseconds since the epoch by the DATABASE clock.
-- queued_until: no ticket of the wait queue lives past it (tickets are capped by it and it is
-- raised before them, under the row lock), so a taker that reads it in the past skips the
-- queue. Tables of earlier versions get it added (ALTER TABLE) when create-table is on.
CREATE TABLE IF NOT EXISTS ${table} (
  name        VARCHAR(255) NOT NULL PRIMARY KEY,
  owner       VARCHAR(255),
  fence       BIGINT       NOT NULL,
  expires_at  BIGINT       NOT NULL,
  acquired_at BIGINT       NOT NULL,
  holder      VARCHAR(255),
  queued_until BIGINT      NOT NULL DEFAULT 0
)
