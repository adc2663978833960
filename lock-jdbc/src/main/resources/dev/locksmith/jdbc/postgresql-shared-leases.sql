-- Leases of semaphores and read-write locks of lock-jdbc. ${table} is the lease table's name
-- with "_shared_leases" appended. One row per live lease (side 'P' a permit, 'R' a read lease,
-- 'W' a write lease) and per waiting writer (side 'Q': while its row lives, no new reader is
-- granted; the writer refreshes it at each poll and deletes it when granted or when it gives
-- up, and a vanished writer's row expires by itself). fence is the grant's token (0 for 'Q').
-- Expired rows are deleted by the next grant of the resource.
-- Times are milliseconds since the epoch by the DATABASE clock.
CREATE TABLE IF NOT EXISTS ${table} (
  kind        CHAR(1)      NOT NULL,
  name        VARCHAR(255) NOT NULL,
  owner       VARCHAR(255) NOT NULL,
  side        CHAR(1)      NOT NULL,
  fence       BIGINT       NOT NULL,
  expires_at  BIGINT       NOT NULL,
  acquired_at BIGINT       NOT NULL,
  holder      VARCHAR(255),
  PRIMARY KEY (kind, name, owner)
)
