-- Wait queue of lock-jdbc, beside the lease table. ${table} is the lease table's name with
-- "_queue" appended. One row per waiting acquire: the grant goes to the lowest live ticket of a
-- name, so a release with waiters is a hand-off. A waiter refreshes its row's expiry while it
-- waits and deletes it when it gives up; a vanished waiter's row expires.
-- Times are milliseconds since the epoch by the DATABASE clock.
CREATE TABLE IF NOT EXISTS ${table} (
  name        VARCHAR(255) NOT NULL,
  ticket      BIGINT       NOT NULL,
  owner       VARCHAR(255) NOT NULL,
  expires_at  BIGINT       NOT NULL,
  PRIMARY KEY (name, ticket)
)
