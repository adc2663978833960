package dev.locksmith.compare;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.etcd.EtcdComparisonTarget;
import dev.locksmith.jdbc.JdbcComparisonTarget;
import dev.locksmith.redis.RedisComparisonTarget;
import dev.locksmith.redlock.RedlockComparisonTarget;
import dev.locksmith.zookeeper.ZooKeeperComparisonTarget;
import dev.locksmith.tck.compare.Comparison;
import dev.locksmith.tck.compare.Report;
import dev.locksmith.tck.compare.Result;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Every backend of this repository under the fault scenarios of FAULTS.md, on real servers:
 * declared guarantee, published prediction and observation side by side. Writes
 * target/fault-comparison.md and .html. A result that observes worse than the backend declares
 * fails the build. Quick scenarios by default; -Dlocksmith.compare.full=true runs them all.
 */
class FaultComparisonIT {
  private static final boolean FULL = Boolean.getBoolean("locksmith.compare.full");

  @Test
  void backendsKeepWhatTheyDeclareUnderFaults() throws Exception {
    try (RedisComparisonTarget redis = new RedisComparisonTarget(); EtcdComparisonTarget etcd = new EtcdComparisonTarget();
        ZooKeeperComparisonTarget zookeeper = new ZooKeeperComparisonTarget();
        RedlockComparisonTarget redlock = new RedlockComparisonTarget()) {
      Report report = Comparison.builder()
          .target(redis.target())
          .target(redlock.target())
          .target(etcd.target())
          .target(zookeeper.target())
          .target(JdbcComparisonTarget.mariadb())
          .target(JdbcComparisonTarget.postgres())
          .quick(!FULL)
          .progress(line -> System.out.println("[compare] " + line))
          .build()
          .run();
      Path dir = Path.of("target");
      Files.createDirectories(dir);
      Files.writeString(dir.resolve("fault-comparison.md"), report.markdown(), StandardCharsets.UTF_8);
      Files.writeString(dir.resolve("fault-comparison.html"), report.html(), StandardCharsets.UTF_8);
      System.out.println(report.markdown());
      List<Result> ran = report.results().stream().filter(r -> r.notRunReason() == null).collect(Collectors.toList());
      assertThat(ran.stream().map(Result::target).distinct()).as("backends with scenarios that ran")
          .containsExactlyInAnyOrder("redis", "redlock", "etcd", "zookeeper", "mariadb", "postgresql");
      assertThat(report.failures()).as("results that observed worse than declared:\n" + report.markdown()).isEmpty();
    }
  }
}
