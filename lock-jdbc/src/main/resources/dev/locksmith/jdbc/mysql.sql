-- Lease table of lock-jdbc for MySQL and MariaDB. ${table} is the configured table name.
-- One row per lock name, kept after release until unused for purge-after; a reserved floor row
-- keeps the highest fence deleted, and new rows start above it, so no fence ever goes back.
-- Times are milliseconds since the epoch by the DATABASE clock. Names are stored as their
-- UTF-8 bytes (255 characters of up to 4 bytes): compared byte for byte, so 'a' and 'A',
-- 'a' and 'a ' (utf8mb4_bin pads with spaces when comparing), NFC and NFD are different locks.
-- queued_until: no ticket of the wait queue lives past it (tickets are capped by it and it is
-- raised before them, under the row lock), so a taker that reads it in the past skips the
-- queue. Tables of earlier versions get it added (ALTER TABLE) when create-table is on.
CREATE TABLE IF NOT EXISTS ${table} (
  name        VARBINARY(1020) NOT NULL,
  owner       VARCHAR(255) NULL,
  fence       BIGINT       NOT NULL,
  expires_at  BIGINT       NOT NULL,
  acquired_at BIGINT       NOT NULL,
  holder      VARCHAR(255) NULL,
  queued_until BIGINT      NOT NULL DEFAULT 0,
  PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
