package dev.locksmith.cli;

import static dev.locksmith.cli.LockctlDemoIT.lockctl;
import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.cli.LockctlDemoIT.Result;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@code lockctl bench} run as a user would, against a real redis-server: the report, not the
 * speed, is checked.
 */
class LockctlBenchIT {

  @Test
  void benchReportsEveryWorkloadAgainstTheLocalBaseline() throws Exception {
    try (RedisFixture redis = RedisFixture.start()) {
      Result r =
          lockctl(
              "bench",
              "--backend",
              redis.uri(),
              "--duration",
              "600ms",
              "--threads",
              "2",
              "--clients",
              "3");
      assertThat(r.exit).as("exit status; stdout: %s%nstderr: %s", r.out, r.err).isZero();
      assertThat(r.out)
          .contains(
              "| figure | " + redis.uri() + " | local: | backend vs local: |",
              "uncontended acquire + release, p50 (µs)",
              "2 threads on distinct locks (ops/s)",
              "3 clients on one lock: hand-offs/s",
              "3 clients on one lock: wait p99 (µs)");
      // every figure was measured: a positive number in both columns, and a ratio that says which
      // way it goes
      Matcher ops =
          Pattern.compile(
                  "\\| 2 threads on distinct locks \\(ops/s\\) \\| ([\\d,.]+) \\| ([\\d,.]+) \\| "
                      + "(([\\d.]+)x (slower|faster)|as fast) \\|")
              .matcher(r.out);
      assertThat(ops.find()).as("the throughput row in %s", r.out).isTrue();
      assertThat(Double.parseDouble(ops.group(1).replace(",", ""))).isPositive();
      assertThat(Double.parseDouble(ops.group(2).replace(",", ""))).isPositive();
      Matcher share =
          Pattern.compile("busiest / idlest client's share of (\\d+) acquisitions").matcher(r.out);
      assertThat(share.find()).isTrue();
      assertThat(Long.parseLong(share.group(1))).as("contended acquisitions on redis").isPositive();
      assertThat(r.err).as("progress goes to stderr").contains("measuring " + redis.uri());
      // what the run leaves in Redis: no key per lock name, only the fence counters of the slots of
      // its 4 names (1 uncontended, 2 threads, 1 contended), shared with every other name of those
      // slots
      assertThat(redis.keys())
          .as("keys left in Redis by the bench")
          .isNotEmpty()
          .hasSizeLessThanOrEqualTo(4)
          .allMatch(k -> k.matches("locksmith:fence:\\{[0-9a-z]+}"), "a fence counter");
    }
  }

  @Test
  void badArgumentsAndAnUnreachableServerAreReportedClearly() throws Exception {
    Result tooShort = lockctl("bench", "--backend", "local:x", "--duration", "10ms");
    assertThat(tooShort.exit).isEqualTo(2);
    assertThat(tooShort.err)
        .contains("--duration was '10ms' but it must be a duration from 500ms to 10m")
        .contains("usage: lockctl bench");
    Result noBackend = lockctl("bench");
    assertThat(noBackend.exit).isEqualTo(2);
    assertThat(noBackend.err).contains("no backend");
    Result unreachable = lockctl("bench", "--backend", "redis://127.0.0.1:1");
    assertThat(unreachable.exit).isEqualTo(69);
    assertThat(unreachable.err).contains("127.0.0.1:1");
    assertThat(lockctl("bench", "--help").out).contains("usage: lockctl bench");
  }
}
