package dev.locksmith.compare;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.tck.compare.ChaosSoak;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;

/**
 * The chaos soak (FAULTS.md, issue 36) on real servers: contenders in separate processes while
 * faults fire at random ({@link ChaosSoak}). In CI its short form runs: 1 minute on Redis (the
 * issue asked for 2; the whole CI run must stay under 30 minutes, and it is at about 27 side by
 * side). On demand: {@code -Dlocksmith.soak.seconds=1800
 * -Dlocksmith.soak.targets=redis,etcd,zookeeper, mariadb,postgresql,redlock} (30 minutes each), and
 * {@code -Dlocksmith.soak.seed=N} to replay a seed. Writes target/chaos-soak.md; fails if a backend
 * lost a fenced update or let a token go back.
 */
class ChaosSoakIT {
  @Test
  void backendsKeepTheirPromiseUnderRandomFaults() throws Exception {
    long seconds = Long.getLong("locksmith.soak.seconds", 60);
    String targets = System.getProperty("locksmith.soak.targets", "redis");
    long seed = Long.getLong("locksmith.soak.seed", ThreadLocalRandom.current().nextLong());
    System.out.println("[soak] seed " + seed + " (replay: -Dlocksmith.soak.seed=" + seed + ")");
    StringBuilder md = new StringBuilder("# Chaos soak\n\n");
    List<ChaosSoak.Outcome> outcomes = new ArrayList<>();
    for (String label : targets.split(",")) {
      List<AutoCloseable> started = new ArrayList<>();
      try {
        ChaosSoak.Outcome o =
            ChaosSoak.run(
                FaultComparisonIT.target(label.trim(), started),
                Duration.ofSeconds(seconds),
                seed,
                line -> System.out.println("[soak] " + line));
        outcomes.add(o);
        md.append(o.markdown());
        System.out.print("[soak] " + o.markdown());
      } finally {
        for (int i = started.size() - 1; i >= 0; i--) {
          started.get(i).close();
        }
      }
    }
    Path dir = Path.of("target");
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("chaos-soak.md"), md.toString(), StandardCharsets.UTF_8);
    for (ChaosSoak.Outcome o : outcomes) {
      assertThat(o.fired().values().stream().mapToInt(Integer::intValue).sum())
          .as("faults fired on %s", o.target())
          .isPositive();
      assertThat(o.holds())
          .as("turns taken on %s in %d s (the contenders must keep working)", o.target(), seconds)
          .isGreaterThan((int) seconds);
      assertThat(o.kept())
          .as("%s kept its promise under the soak (seed %d): %s", o.target(), o.seed(), md)
          .isTrue();
    }
  }
}
