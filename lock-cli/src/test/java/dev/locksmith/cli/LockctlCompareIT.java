package dev.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.redis.RedisServerExtension;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** {@code lockctl compare --quick} against a real redis-server, as a user runs it. */
class LockctlCompareIT {
  @RegisterExtension
  static final RedisServerExtension REDIS = RedisServerExtension.single("redis-compare");

  @TempDir Path root;

  @Test
  void
      quickComparisonOfARedisServerAgreesWithItsDeclarationAndWritesTheReportOutsideTheWorkingDirectory()
          throws Exception {
    Path work = Files.createDirectories(root.resolve("work"));
    Path tmp = Files.createDirectories(root.resolve("tmp"));
    Path out = root.resolve("reports");
    String uri = REDIS.uri();
    Lockctl.Result r =
        Lockctl.start(
                work, tmp, Map.of(), "compare", "--backend", uri, "--quick", "--contenders", "2")
            .finish(Duration.ofSeconds(120));
    assertThat(r.exit).as("%s", r).isZero();
    assertThat(r.out)
        .contains(
            "\n" + uri + "\n",
            "5 agree with the declared guarantee, 0 disagree",
            "not run: 5: no fault hook 'pauseServer'");
    assertThat(r.out)
        .containsPattern(
            "(?m)^ 1  holder frozen \\(SIGSTOP\\) past its lease,\\s+F\\s+F\\s+F\\s+agrees$");
    assertThat(r.out)
        .containsPattern(
            "(?m)^ 2  holder killed \\(SIGKILL\\) while holding\\s+S\\s+S\\s+S\\s+agrees$");
    // Redis declares SEMAPHORES, so its quick comparison holds the semaphore pause row too (the
    // semaphore crash row runs in the full comparison only)
    assertThat(r.out)
        .containsPattern(
            "(?m)^ 1  semaphore \\(N=2\\): a permit holder frozen\\s+F\\s+F \\(row 1 for"
                + " a\\s+F\\s+agrees$");
    assertThat(r.out)
        .doesNotContainPattern("(?m)^ 2  semaphore \\(N=2\\): a permit holder killed.*agrees$");
    assertThat(r.out.lines().filter(l -> l.length() > CompareTable.WIDTH))
        .as("lines wider than 100 columns")
        .isEmpty();
    assertThat(scenarioNumbers(r.out))
        .as("rows by scenario number")
        .isSorted()
        .contains(1, 2, 4, 5, 9, 11);

    assertThat(Lockctl.filesIn(work)).as("nothing written into the working directory").isEmpty();
    Matcher written = Pattern.compile("(?m)^  (\\S+fault-comparison\\.html)$").matcher(r.out);
    assertThat(written.find()).as("where the report went, in %s", r.out).isTrue();
    Path html = Path.of(written.group(1));
    assertThat(html).startsWith(tmp).exists();
    assertThat(Files.readString(html)).contains("<svg");
    assertThat(html.resolveSibling("fault-comparison.md")).exists();

    Lockctl.Result named =
        Lockctl.start(
                work,
                tmp,
                Map.of(),
                "compare",
                "--backend",
                uri,
                "--quick",
                "--contenders",
                "2",
                "--out",
                out.toString())
            .finish(Duration.ofSeconds(120));
    assertThat(named.exit).as("%s", named).isZero();
    assertThat(named.out).contains(out.resolve("fault-comparison.md").toString());
    assertThat(out.resolve("fault-comparison.html")).exists();
    assertThat(Lockctl.filesIn(work)).isEmpty();
  }

  /**
   * @return the numbers of the table's rows, in the order printed
   */
  private static List<Integer> scenarioNumbers(String out) {
    List<Integer> numbers = new ArrayList<>();
    Matcher m = Pattern.compile("(?m)^ ?(\\d{1,2})  \\S").matcher(out);
    while (m.find()) {
      numbers.add(Integer.parseInt(m.group(1)));
    }
    return numbers;
  }

  @Test
  void compareNeedsABackend() throws Exception {
    Lockctl.Result r = Lockctl.run("compare");
    assertThat(r.exit).isEqualTo(2);
    assertThat(r.err).contains("no backend");
  }
}
