package dev.locksmith.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * lock-bom has no parent (so it leaks no third-party versions) and so repeats the version: this
 * checks it against the root pom. It lives here because a pom-packaging module runs no tests.
 */
class BomTest {
  /** Modules of the root pom that are never published. */
  private static final Set<String> UNPUBLISHED =
      Set.of(
          "lock-bench",
          "lock-bom",
          "lock-spring-boot3-test",
          "lock-docs",
          "examples/spring-boot-demo",
          "examples/kotlin-webflux-demo");

  @Test
  void theBomListsEveryPublishedModuleAtTheProjectVersion() throws Exception {
    Path root = Path.of("..").toAbsolutePath().normalize();
    String rootPom = Files.readString(root.resolve("pom.xml"));
    String bom = Files.readString(root.resolve("lock-bom/pom.xml"));
    String version =
        first(rootPom, "<artifactId>locksmith-parent</artifactId>\\s*<version>([^<]+)</version>");
    assertThat(first(bom, "<artifactId>lock-bom</artifactId>\\s*<version>([^<]+)</version>"))
        .as("lock-bom's own version, written out since it has no parent")
        .isEqualTo(version);
    List<String> listed =
        all(
            bom,
            "<artifactId>(lock-[^<]+)</artifactId>\\s*<version>\\$\\{project.version}</version>");
    List<String> missing = new ArrayList<>();
    for (String module : all(rootPom, "<module>([^<]+)</module>")) {
      if (!UNPUBLISHED.contains(module) && !listed.contains(module)) {
        missing.add(module);
      }
    }
    assertThat(missing)
        .as(
            "modules of the root pom missing from lock-bom/pom.xml (add them, or to UNPUBLISHED"
                + " here)")
        .isEmpty();
  }

  private static String first(String text, String regex) {
    Matcher m = Pattern.compile(regex).matcher(text);
    assertThat(m.find()).as("pattern " + regex).isTrue();
    return m.group(1);
  }

  private static List<String> all(String text, String regex) {
    List<String> found = new ArrayList<>();
    Matcher m = Pattern.compile(regex).matcher(text);
    while (m.find()) {
      found.add(m.group(1));
    }
    return found;
  }
}
