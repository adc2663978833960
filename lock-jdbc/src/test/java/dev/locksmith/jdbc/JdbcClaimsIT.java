package dev.locksmith.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.DistributedLock;
import dev.locksmith.DistributedReadWriteLock;
import dev.locksmith.Guarantees;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockConfig;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.LockTimeoutException;
import dev.locksmith.Locks;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Semaphores and read-write locks on every database (MariaDB through {@code jdbc:mariadb:} and
 * {@code jdbc:mysql:}, PostgreSQL, H2), through the client: the permit count, the rules of each
 * side, writer preference and its mark's end, fences, expiry, renewal, separate resources, the rows
 * left behind, and the tables' creation.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JdbcClaimsIT {
  private static final String TABLE = "claims_locks";
  private static final String LEASES = SharedTable.suffixed(TABLE, "_shared_leases");

  private static TestDatabases.Db db(String which) throws Exception {
    switch (which) {
      case "mariadb":
      case "mysql":
        return TestDatabases.mariadb();
      case "postgresql":
        return TestDatabases.postgres();
      default:
        return TestDatabases.h2();
    }
  }

  private static String uri(String which, String table, String more) throws Exception {
    String uri = db(which).uri;
    if (which.equals("mysql")) {
      uri = "jdbc:mysql:" + uri.substring("jdbc:mariadb:".length());
    }
    return uri + (uri.contains("?") ? "&" : "?") + "table=" + table + more;
  }

  private static LockClient client(
      String which, Duration lease, boolean autoRenew, Duration recheck) throws Exception {
    LockConfig config =
        LockConfig.builder()
            .uri(uri(which, TABLE, ""))
            .lease(lease)
            .autoRenew(autoRenew)
            .recheck(recheck)
            .build();
    return Locks.connect(config);
  }

  private static LockClient client(String which) throws Exception {
    return client(which, Duration.ofSeconds(30), false, Duration.ofSeconds(1));
  }

  private static String name(String what) {
    return "claims/" + what + "/" + UUID.randomUUID().toString().substring(0, 8);
  }

  private static int rows(TestDatabases.Db db, String name) throws SQLException {
    return db.countRows(LEASES, name);
  }

  /**
   * The declaration is exact per primitive: notified wake-up for semaphores and read-write locks
   * only where their releases notify (PostgreSQL); for locks wherever the database can wake another
   * process; FIFO for locks only.
   */
  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "mysql", "postgresql", "h2"})
  void featuresAreDeclaredPerPrimitiveAsTheyAre(String which) throws Exception {
    try (LockClient c = client(which)) {
      Guarantees g = c.guarantees();
      boolean postgres = which.equals("postgresql");
      assertThat(g.has(Feature.NOTIFIED_WAKEUP, Guarantees.Primitive.LOCK))
          .as("notified lock waiters")
          .isEqualTo(!which.equals("h2"));
      assertThat(g.has(Feature.NOTIFIED_WAKEUP, Guarantees.Primitive.SEMAPHORE))
          .as("notified semaphore waiters")
          .isEqualTo(postgres);
      assertThat(g.has(Feature.NOTIFIED_WAKEUP, Guarantees.Primitive.READ_WRITE_LOCK))
          .as("notified read-write waiters")
          .isEqualTo(postgres);
      assertThat(g.has(Feature.FIFO_FAIRNESS, Guarantees.Primitive.LOCK)).as("FIFO locks").isTrue();
      assertThat(g.has(Feature.FIFO_FAIRNESS, Guarantees.Primitive.SEMAPHORE))
          .as("FIFO semaphores")
          .isFalse();
      assertThat(g.has(Feature.FIFO_FAIRNESS, Guarantees.Primitive.READ_WRITE_LOCK))
          .as("FIFO read-write locks")
          .isFalse();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "mysql", "postgresql", "h2"})
  void aSemaphoreGrantsAtMostItsPermitsWithRisingFences(String which) throws Exception {
    String name = name("permits");
    List<LockClient> clients = new ArrayList<>();
    try {
      for (int i = 0; i < 4; i++) {
        clients.add(client(which));
      }
      List<Lease> held = new ArrayList<>();
      long last = 0;
      for (int i = 0; i < 3; i++) {
        Lease l = clients.get(i).semaphore(name, 3).acquire(Duration.ofSeconds(5));
        assertThat(l.fencingToken()).as("token of permit %d", i + 1).isGreaterThan(last);
        last = l.fencingToken();
        held.add(l);
      }
      DistributedLock fourth = clients.get(3).semaphore(name, 3);
      assertThat(fourth.tryAcquire()).as("a fourth permit of three").isEmpty();
      held.get(1).release();
      Lease l = fourth.acquire(Duration.ofSeconds(5));
      assertThat(l.fencingToken()).as("token after a release").isGreaterThan(last);
      assertThat(clients.get(1).semaphore(name, 3).tryAcquire())
          .as("a fourth permit again")
          .isEmpty();
      l.release();
      held.get(0).release();
      held.get(2).release();
      assertThat(rows(db(which), name)).as("rows left after every permit was released").isZero();
    } finally {
      clients.forEach(LockClient::close);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void anotherCountWhilePermitsAreHeldIsRefusedAndTakesNothing(String which) throws Exception {
    String name = name("count");
    try (LockClient a = client(which);
        LockClient b = client(which)) {
      Lease held = a.semaphore(name, 2).acquire(Duration.ofSeconds(5));
      assertThatThrownBy(() -> b.semaphore(name, 3).acquire(Duration.ofSeconds(2)))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("`permits` was 3")
          .hasMessageContaining("in use with 2 permits");
      assertThat(rows(db(which), name)).as("rows after the refused count").isEqualTo(1);
      assertThat(b.semaphore(name, 2).tryAcquire()).as("the second of two permits").isPresent();
      held.release();
      b.close();
      // no permit live: the count may change
      assertThat(a.semaphore(name, 5).tryAcquire())
          .as("a permit of five once none is held")
          .isPresent();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "mysql", "postgresql", "h2"})
  void readersShareAndAWriterExcludesEveryone(String which) throws Exception {
    String name = name("rw");
    try (LockClient a = client(which);
        LockClient b = client(which);
        LockClient w = client(which)) {
      DistributedReadWriteLock rwA = a.readWriteLock(name);
      DistributedReadWriteLock rwB = b.readWriteLock(name);
      DistributedReadWriteLock rwW = w.readWriteLock(name);
      Lease r1 = rwA.readLock().acquire(Duration.ofSeconds(5));
      Lease r2 = rwB.readLock().acquire(Duration.ofSeconds(5));
      assertThat(r2.fencingToken()).isGreaterThan(r1.fencingToken());
      assertThat(rwW.writeLock().tryAcquire())
          .as("the write side while two readers hold")
          .isEmpty();
      r1.release();
      assertThat(rwW.writeLock().tryAcquire())
          .as("the write side while one reader holds")
          .isEmpty();
      r2.release();
      Lease wl = rwW.writeLock().acquire(Duration.ofSeconds(5));
      assertThat(wl.fencingToken()).as("the write token").isGreaterThan(r2.fencingToken());
      assertThat(rwA.readLock().tryAcquire()).as("the read side while a writer holds").isEmpty();
      assertThat(rwB.writeLock().tryAcquire()).as("a second writer").isEmpty();
      wl.release();
      Lease r3 = rwA.readLock().acquire(Duration.ofSeconds(5));
      assertThat(r3.fencingToken())
          .as("a read token after the write")
          .isGreaterThan(wl.fencingToken());
      r3.release();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void aWaitingWriterHoldsNewReadersBackUntilItGivesUp(String which) throws Exception {
    String name = name("writer-waits");
    try (LockClient a = client(which);
        LockClient b = client(which);
        LockClient w = client(which)) {
      Lease r1 = a.readWriteLock(name).readLock().acquire(Duration.ofSeconds(5));
      CompletableFuture<Throwable> writer =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  w.readWriteLock(name).writeLock().acquire(Duration.ofSeconds(3)).release();
                  return null;
                } catch (Throwable t) {
                  return t;
                }
              });
      waitForMark(db(which), name);
      assertThat(b.readWriteLock(name).readLock().tryAcquire())
          .as("a new reader while a writer waits")
          .isEmpty();
      Throwable gaveUp = writer.get(10, TimeUnit.SECONDS);
      assertThat(gaveUp).as("the writer's outcome").isInstanceOf(LockTimeoutException.class);
      // Its mark went with it: no wait for it to expire.
      Optional<Lease> r2 = b.readWriteLock(name).readLock().tryAcquire();
      assertThat(r2).as("a new reader once the writer gave up").isPresent();
      r2.get().release();
      r1.release();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void aWaitingWriterIsGrantedOnTheLastReadersReleaseBeforeNewReaders(String which)
      throws Exception {
    String name = name("writer-first");
    try (LockClient a = client(which);
        LockClient b = client(which);
        LockClient w = client(which)) {
      Lease r1 = a.readWriteLock(name).readLock().acquire(Duration.ofSeconds(5));
      CompletableFuture<Lease> writer =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return w.readWriteLock(name).writeLock().acquire(Duration.ofSeconds(20));
                } catch (InterruptedException e) {
                  throw new IllegalStateException(e);
                }
              });
      waitForMark(db(which), name);
      CompletableFuture<Lease> reader =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return b.readWriteLock(name).readLock().acquire(Duration.ofSeconds(20));
                } catch (InterruptedException e) {
                  throw new IllegalStateException(e);
                }
              });
      TimeUnit.MILLISECONDS.sleep(300);
      assertThat(reader).as("the reader that came after the writer").isNotDone();
      r1.release();
      Lease wl = writer.get(10, TimeUnit.SECONDS);
      assertThat(reader).as("the later reader while the writer holds").isNotDone();
      wl.release();
      Lease r2 = reader.get(10, TimeUnit.SECONDS);
      assertThat(r2.fencingToken()).isGreaterThan(wl.fencingToken());
      r2.release();
    }
  }

  /**
   * A writer that vanished while waiting (its mark written here by hand, as it would leave it)
   * holds readers back for the mark's life only.
   */
  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void aVanishedWritersMarkEndsByItself(String which) throws Exception {
    String name = name("vanished-writer");
    TestDatabases.Db db = db(which);
    try (LockClient a = client(which)) {
      a.readWriteLock(name)
          .readLock()
          .acquire(Duration.ofSeconds(5))
          .release(); // creates the tables and the row
      Dialect dialect =
          db.name.equals("postgresql")
              ? Dialect.POSTGRESQL
              : db.name.equals("h2") ? Dialect.H2 : Dialect.MARIADB;
      try (Connection c = db.admin();
          PreparedStatement ps =
              c.prepareStatement(
                  "INSERT INTO "
                      + LEASES
                      + " (kind, name, owner, side, fence, expires_at, acquired_at, holder) VALUES"
                      + " ('R', ?, 'gone', 'Q', 0, "
                      + dialect.nowMillis
                      + " + 1500, "
                      + dialect.nowMillis
                      + ", 'test')")) {
        ps.setString(1, name);
        ps.executeUpdate();
      }
      assertThat(a.readWriteLock(name).readLock().tryAcquire())
          .as("a reader while the mark lives")
          .isEmpty();
      long start = System.nanoTime();
      Lease r = a.readWriteLock(name).readLock().acquire(Duration.ofSeconds(10));
      long waitedMillis = (System.nanoTime() - start) / 1_000_000;
      assertThat(waitedMillis).as("ms a reader waited for a 1.5 s mark").isBetween(500L, 4_000L);
      r.release();
      assertThat(rows(db, name)).as("rows once the mark expired and the reader left").isZero();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void aLockASemaphoreAndAReadWriteLockOfOneNameAreThreeResources(String which) throws Exception {
    String name = name("three");
    try (LockClient a = client(which);
        LockClient b = client(which)) {
      Lease lock = a.lock(name).acquire(Duration.ofSeconds(5));
      Lease permit = a.semaphore(name, 1).acquire(Duration.ofSeconds(5));
      Lease write = a.readWriteLock(name).writeLock().acquire(Duration.ofSeconds(5));
      assertThat(b.semaphore(name, 1).tryAcquire()).as("the semaphore's only permit").isEmpty();
      lock.release();
      assertThat(b.semaphore(name, 1).tryAcquire())
          .as("the semaphore after the lock's release")
          .isEmpty();
      assertThat(b.readWriteLock(name).readLock().tryAcquire())
          .as("the read side after the lock's release")
          .isEmpty();
      permit.release();
      assertThat(b.readWriteLock(name).readLock().tryAcquire())
          .as("the read side after the permit's release")
          .isEmpty();
      write.release();
      assertThat(b.readWriteLock(name).readLock().tryAcquire())
          .as("the read side after the write's release")
          .isPresent();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void aPermitExpiresWithoutRenewalAndLivesOnWithIt(String which) throws Exception {
    String name = name("expiry");
    try (LockClient renewing = client(which, Duration.ofMillis(800), true, Duration.ofSeconds(1));
        LockClient lapsing = client(which, Duration.ofMillis(800), false, Duration.ofSeconds(1));
        LockClient other = client(which)) {
      Lease kept = renewing.semaphore(name, 2).acquire(Duration.ofSeconds(5));
      Lease lapsed = lapsing.semaphore(name, 2).acquire(Duration.ofSeconds(5));
      long start = System.nanoTime();
      Lease third = other.semaphore(name, 2).acquire(Duration.ofSeconds(10));
      long waitedMillis = (System.nanoTime() - start) / 1_000_000;
      assertThat(waitedMillis)
          .as("ms until the unrenewed permit of 800 ms was free")
          .isBetween(400L, 5_000L);
      assertThat(third.fencingToken()).isGreaterThan(lapsed.fencingToken());
      TimeUnit.MILLISECONDS.sleep(1_200);
      assertThat(kept.isValid()).as("the renewed permit after 2 leases").isTrue();
      assertThat(other.semaphore(name, 2).tryAcquire()).as("a third permit of two").isEmpty();
      assertThat(kept.release()).as("release of the renewed permit").isTrue();
      third.release();
    }
  }

  /**
   * With a long recheck, only a wake-up (PostgreSQL) or the backoff's polling (the others) can
   * bring the waiter in soon.
   */
  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void aReleaseBringsAWaiterInSoon(String which) throws Exception {
    String name = name("wake");
    try (LockClient a = client(which, Duration.ofSeconds(30), false, Duration.ofSeconds(20));
        LockClient b = client(which, Duration.ofSeconds(30), false, Duration.ofSeconds(20))) {
      Lease held = a.semaphore(name, 1).acquire(Duration.ofSeconds(5));
      CompletableFuture<Long> waiter =
          CompletableFuture.supplyAsync(
              () -> {
                try (Lease l = b.semaphore(name, 1).acquire(Duration.ofSeconds(15))) {
                  return System.nanoTime();
                } catch (InterruptedException e) {
                  throw new IllegalStateException(e);
                }
              });
      TimeUnit.MILLISECONDS.sleep(1_300); // the waiter is asleep by now
      long released = System.nanoTime();
      held.release();
      long inMillis = (waiter.get(15, TimeUnit.SECONDS) - released) / 1_000_000;
      assertThat(inMillis).as("ms from the release to the waiter's grant").isLessThan(500L);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"mariadb", "postgresql", "h2"})
  void withoutCreateTableMissingClaimTablesAreReportedWithTheirDdl(String which) throws Exception {
    String table = "claims_nocreate_" + UUID.randomUUID().toString().substring(0, 8);
    try (LockClient creating =
        Locks.connect(LockConfig.builder().uri(uri(which, table, "")).build())) {
      creating
          .lock("x")
          .acquire(Duration.ofSeconds(5))
          .release(); // the lease table and queue, not the claims' tables
    }
    try (LockClient c =
        Locks.connect(LockConfig.builder().uri(uri(which, table, "&create-table=false")).build())) {
      c.lock("x").acquire(Duration.ofSeconds(5)).release(); // locks need nothing new
      assertThatThrownBy(() -> c.semaphore("x", 2).tryAcquire())
          .isInstanceOf(LockConfigurationException.class)
          .hasMessageContaining(table + "_shared")
          .hasMessageContaining(table + "_shared_leases")
          .hasMessageContaining("CREATE TABLE");
    }
    try (LockClient c = Locks.connect(LockConfig.builder().uri(uri(which, table, "")).build())) {
      assertThat(c.semaphore("x", 2).tryAcquire())
          .as("a permit once the tables may be created")
          .isPresent();
    }
  }

  private static void waitForMark(TestDatabases.Db db, String name) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (System.nanoTime() < deadline) {
      try (Connection c = db.admin();
          PreparedStatement ps =
              c.prepareStatement(
                  "SELECT COUNT(*) FROM " + LEASES + " WHERE name = ? AND side = 'Q'")) {
        ps.setString(1, name);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          if (rs.getInt(1) > 0) {
            return;
          }
        }
      }
      TimeUnit.MILLISECONDS.sleep(20);
    }
    throw new AssertionError("no waiting writer's mark for '" + name + "' within 5 s");
  }
}
