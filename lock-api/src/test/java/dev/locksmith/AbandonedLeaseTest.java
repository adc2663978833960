package dev.locksmith;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A lease the application drops without releasing it is released once the garbage collector finds
 * it unreachable, with a warning that names the lock and the thread that took it, and with {@code
 * dropped-leases=trace} the code. Holdings of the {@link Lock} view belong to their thread and are
 * kept.
 */
class AbandonedLeaseTest {
  private final ByteArrayOutputStream log = new ByteArrayOutputStream();
  private PrintStream savedErr;

  @BeforeEach
  void captureLog() {
    savedErr = System.err;
    System.setErr(new PrintStream(new TeeStream(savedErr, log), true, StandardCharsets.UTF_8));
  }

  @AfterEach
  void restoreLog() {
    System.setErr(savedErr);
  }

  private String logged() {
    synchronized (log) {
      return log.toString(StandardCharsets.UTF_8);
    }
  }

  /** Takes a lock and keeps nothing of it: the lease is unreachable once this returns. */
  private static long takeAndDrop(LockClient client, String name) throws InterruptedException {
    return client.lock(name).acquire(Duration.ofSeconds(5)).fencingToken();
  }

  /** Collects garbage until {@code other} can take the lock, for at most 20 s. */
  private static boolean freedByGc(LockClient other, String name) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (System.nanoTime() < deadline) {
      System.gc();
      var got = other.lock(name).tryAcquire(Duration.ofMillis(50));
      if (got.isPresent()) {
        got.get().release();
        return true;
      }
    }
    return false;
  }

  @Test
  void aDroppedLeaseIsReleasedWithAWarningNamingTheLockAndTheThread() throws Exception {
    String space = "local:abandoned-" + UUID.randomUUID();
    try (LockClient client = Locks.connect(space);
        LockClient other = Locks.connect(space)) {
      long token = takeAndDrop(client, "dropped");
      assertThat(other.lock("dropped").tryAcquire()).as("just after the drop").isEmpty();
      assertThat(freedByGc(other, "dropped")).as("freed after the lease became garbage").isTrue();
      String warning =
          logged()
              .lines()
              .filter(l -> l.contains("lock 'dropped'"))
              .findFirst()
              .orElseThrow(
                  () -> new AssertionError("no warning about lock 'dropped':\n" + logged()));
      assertThat(warning)
          .contains("WARN")
          .contains("fencing token " + token)
          .contains("thread '" + Thread.currentThread().getName() + "'")
          .contains("dropped by the application without being released")
          .contains("set dropped-leases=trace");
      assertThat(logged()).doesNotContain("takeAndDrop");
    }
  }

  @Test
  void withTraceTheWarningShowsTheCodeThatTookTheLease() throws Exception {
    String space = "local:abandoned-" + UUID.randomUUID();
    try (LockClient client =
            Locks.connect(LockConfig.builder().uri(space + "?dropped-leases=trace").build());
        LockClient other = Locks.connect(space)) {
      assertThat(client.toString()).isNotNull();
      takeAndDrop(client, "traced");
      assertThat(freedByGc(other, "traced")).as("freed after the lease became garbage").isTrue();
      assertThat(logged())
          .contains("lock 'traced'")
          .contains("where lock 'traced'")
          .contains("AbandonedLeaseTest.takeAndDrop")
          .doesNotContain("set dropped-leases=trace");
    }
  }

  @Test
  void leasesStillReferencedAndLockViewHoldingsSurviveCollections() throws Exception {
    String space = "local:abandoned-" + UUID.randomUUID();
    try (LockClient client = Locks.connect(space);
        LockClient other = Locks.connect(space)) {
      Lease kept = client.lock("kept").acquire(Duration.ofSeconds(5));
      Lock view = client.lock("viewed").asLock();
      view.lock();
      for (int i = 0; i < 5; i++) {
        System.gc();
        Thread.sleep(100);
      }
      assertThat(other.lock("kept").tryAcquire()).as("a lease still referenced").isEmpty();
      assertThat(other.lock("viewed").tryAcquire()).as("a Lock view's holding").isEmpty();
      view.unlock();
      assertThat(kept.release()).isTrue();
      assertThat(logged()).doesNotContain("lock 'kept'").doesNotContain("lock 'viewed'");
    }
  }

  @Test
  void withKeepADroppedLeaseStaysHeld() throws Exception {
    String space = "local:abandoned-" + UUID.randomUUID();
    try (LockClient client = Locks.connect(space + "?dropped-leases=keep");
        LockClient other = Locks.connect(space)) {
      takeAndDrop(client, "kept-by-setting");
      for (int i = 0; i < 5; i++) {
        System.gc();
        Thread.sleep(100);
      }
      assertThat(other.lock("kept-by-setting").tryAcquire()).as("a dropped lease kept").isEmpty();
      assertThat(logged()).doesNotContain("lock 'kept-by-setting'");
    }
  }

  @Test
  void droppedLeasesIsOneOfThreeValues() {
    assertThat(LockConfig.builder().uri("local:x").build().droppedLeases())
        .isEqualTo(LockConfig.DroppedLeases.RELEASE);
    assertThat(LockConfig.builder().uri("local:x?dropped-leases=TRACE").build().droppedLeases())
        .isEqualTo(LockConfig.DroppedLeases.TRACE);
    assertThat(
            LockConfig.builder()
                .uri("local:x?dropped-leases=trace")
                .droppedLeases(LockConfig.DroppedLeases.KEEP)
                .build()
                .droppedLeases())
        .isEqualTo(LockConfig.DroppedLeases.KEEP);
    assertThat(
            LockConfig.builder()
                .uri("local:x")
                .droppedLeases(LockConfig.DroppedLeases.KEEP)
                .build()
                .toString())
        .contains("dropped-leases=keep");
    assertThatThrownBy(() -> LockConfig.builder().uri("local:x?dropped-leases=maybe").build())
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("`dropped-leases` was 'maybe'")
        .hasMessageContaining("release (the default), trace or keep");
    assertThatThrownBy(() -> LockConfig.builder().uri("local:x").droppedLeases(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("`droppedLeases`");
  }

  /** Writes to the real stderr and to the captured log. */
  private static final class TeeStream extends java.io.OutputStream {
    private final PrintStream out;
    private final ByteArrayOutputStream copy;

    TeeStream(PrintStream out, ByteArrayOutputStream copy) {
      this.out = out;
      this.copy = copy;
    }

    @Override
    public void write(int b) {
      out.write(b);
      synchronized (copy) {
        copy.write(b);
      }
    }

    @Override
    public void write(byte[] b, int off, int len) {
      out.write(b, off, len);
      synchronized (copy) {
        copy.write(b, off, len);
      }
    }
  }
}
