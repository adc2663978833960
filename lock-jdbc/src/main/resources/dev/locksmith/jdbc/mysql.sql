-- Lease table of lock-jdbc for MySQL and MariaDB. ${table} is the configured table name.
-- One row per lock name; rows are kept after release so the fence counter never goes back.
-- Times are milliseconds since the epoch by the DATABASE clock. Names are stored as their
-- UTF-8 bytes (255 characters of up to 4 bytes): compared byte for byte, so 'a' and 'A',
-- 'a' and 'a ' (utf8mb4_bin pads with spaces when comparing), NFC and NFD are different locks.
CREATE TABLE IF NOT EXISTS ${table} (
  name        VARBINARY(1020) NOT NULL,
  owner       VARCHAR(255) NULL,
  fence       BIGINT       NOT NULL,
  expires_at  BIGINT       NOT NULL,
  acquired_at BIGINT       NOT NULL,
  holder      VARCHAR(255) NULL,
  PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
