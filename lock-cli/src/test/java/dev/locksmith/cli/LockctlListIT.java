package dev.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import dev.locksmith.redis.RedisServerExtension;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code lockctl ls} against a real redis-server, the locks held by the test's own client. */
class LockctlListIT {
  @RegisterExtension
  static final RedisServerExtension REDIS = RedisServerExtension.single("lockctl-ls");

  static RedisFixture redis;
  static LockClient client;

  @BeforeAll
  static void startRedis() {
    redis = RedisFixture.on(REDIS);
    client = Locks.connect(redis.uri() + "?application=ls-it");
  }

  @AfterAll
  static void stopRedis() {
    if (client != null) {
      client.close();
    }
    if (redis != null) {
      redis.close();
    }
  }

  @Test
  void listsEveryLockHeldUnderThePrefixWithTokenAndHolder() throws Exception {
    List<Lease> held = new ArrayList<>();
    try {
      for (String name : new String[] {"ls/a", "ls/b", "ls/c*[x]"}) {
        held.add(client.lock(name).acquire(Duration.ofSeconds(5)));
      }
      held.add(client.lock("ls-outside").acquire(Duration.ofSeconds(5)));
      assertThat(client.lock("ls/released").acquire(Duration.ofSeconds(5)).release()).isTrue();
      Lockctl.Result r = Lockctl.run("ls", "--backend", redis.uri(), "--limit", "1", "ls/");
      assertThat(r.exit).as("%s", r).isZero();
      List<String> lines = r.out.lines().toList();
      assertThat(lines.get(0)).startsWith("NAME").contains("TOKEN", "REMAINING", "HOLDER");
      assertThat(lines).hasSize(4);
      assertThat(lines.get(1)).startsWith("ls/a ").contains(" " + held.get(0).fencingToken() + " ");
      assertThat(lines.get(2)).startsWith("ls/b ");
      assertThat(lines.get(3)).startsWith("ls/c*[x] ");
      assertThat(lines.subList(1, 4))
          .allSatisfy(
              l -> assertThat(l).contains("ls-it on ", "(pid " + ProcessHandle.current().pid()));
      Lockctl.Result all = Lockctl.run("ls", "--backend", redis.uri());
      assertThat(all.out).contains("ls-outside ").contains("ls/a ");
    } finally {
      held.forEach(Lease::release);
    }
    Lockctl.Result none = Lockctl.run("ls", "--backend", redis.uri(), "ls/");
    assertThat(none.exit).as("%s", none).isZero();
    assertThat(none.out.trim()).isEqualTo("no lock held");
  }

  @Test
  void listsSemaphoresAndReadWriteLocksALineAHolder() throws Exception {
    List<Lease> held = new ArrayList<>();
    try {
      held.add(client.semaphore("kinds/pool", 3).acquire(Duration.ofSeconds(5)));
      held.add(client.semaphore("kinds/pool", 3).acquire(Duration.ofSeconds(5)));
      held.add(client.readWriteLock("kinds/prices").readLock().acquire(Duration.ofSeconds(5)));
      held.add(client.readWriteLock("kinds/report").writeLock().acquire(Duration.ofSeconds(5)));
      held.add(client.lock("kinds/job").acquire(Duration.ofSeconds(5)));
      Lockctl.Result r = Lockctl.run("ls", "--backend", redis.uri(), "--limit", "1", "kinds/");
      assertThat(r.exit).as("%s", r).isZero();
      List<String> lines = r.out.lines().toList();
      assertThat(lines.get(0)).startsWith("NAME").contains("KIND", "TOKEN");
      assertThat(lines.subList(1, lines.size()))
          .as("%s", r.out)
          .satisfiesExactly(
              l -> assertThat(l).startsWith("kinds/job ").contains(" lock "),
              l -> assertThat(l).startsWith("kinds/pool ").contains(" permit "),
              l -> assertThat(l).startsWith("kinds/pool ").contains(" permit "),
              l -> assertThat(l).startsWith("kinds/prices ").contains(" read "),
              l -> assertThat(l).startsWith("kinds/report ").contains(" write "));
      assertThat(r.out)
          .contains(" " + held.get(0).fencingToken() + " ", " " + held.get(1).fencingToken() + " ");
    } finally {
      held.forEach(Lease::release);
    }
  }

  @Test
  void watchPrintsTheTableAgainUntilItsCount() throws Exception {
    try (Lease lease = client.lock("watch/a").acquire(Duration.ofSeconds(5))) {
      Lockctl.Result r =
          Lockctl.run(
              "watch", "--backend", redis.uri(), "--interval", "100ms", "--count", "3", "watch/");
      assertThat(r.exit).as("%s", r).isZero();
      assertThat(r.out.lines().filter(l -> l.startsWith("# ")).count()).isEqualTo(3);
      assertThat(r.out.lines().filter(l -> l.startsWith("watch/a ")).count()).isEqualTo(3);
      assertThat(r.out).contains("ls-it on ");
    }
    Lockctl.Result bad =
        Lockctl.run("watch", "--backend", redis.uri(), "--interval", "10ms", "--count", "1");
    assertThat(bad.exit).as("%s", bad).isEqualTo(2);
    assertThat(bad.err)
        .contains("--interval was '10ms' but it must be a duration from 100ms to 1h");
  }

  @Test
  void aBadLimitOrTwoPrefixesAreRefused() throws Exception {
    for (String[] argv :
        new String[][] {
          {"ls", "--backend", redis.uri(), "--limit", "0"},
          {"ls", "--backend", redis.uri(), "--limit", "1001"},
          {"ls", "--backend", redis.uri(), "--limit", "ten"},
          {"ls", "--backend", redis.uri(), "a", "b"},
          {"ls", "--backend", redis.uri(), "bad\u0001prefix"},
          // serve checks its PREFIX before it serves anything, as ls does
          {"serve", "--backend", redis.uri(), "--port", "0", "bad\u0001prefix"},
          {"serve", "--backend", redis.uri(), "--port", "0", "a", "b"}
        }) {
      Lockctl.Result r = Lockctl.run(argv);
      assertThat(r.exit).as("%s", r).isEqualTo(2);
    }
    assertThat(Lockctl.run("ls", "--backend", redis.uri(), "--limit", "0").err)
        .contains("--limit was '0' but it must be a whole number from 1 to 1000");
    assertThat(Lockctl.run("serve", "--backend", redis.uri(), "--port", "0", "bad\u0001prefix").err)
        .contains("PREFIX: ")
        .contains("prefix");
  }
}
