-- Semaphores and read-write locks of lock-jdbc, beside the lease table. ${table} is the lease
-- table's name with "_shared" appended. One row per semaphore (kind 'S') or read-write lock
-- (kind 'R'): a separate resource from a lock of the same name. A grant locks this row (SELECT
-- ... FOR UPDATE), so grants of one resource run one at a time. Rows are kept after the last
-- lease ends, until a purge finds none for purge-after (new rows start above the lease table's
-- floor row, so the fence counter never goes back); permits is the count the live permits were
-- taken with (a semaphore with none live takes the count of its next grant).
CREATE TABLE IF NOT EXISTS ${table} (
  kind        CHAR(1)      NOT NULL,
  name        VARCHAR(255) NOT NULL,
  permits     INT          NOT NULL,
  fence       BIGINT       NOT NULL,
  PRIMARY KEY (kind, name)
)
