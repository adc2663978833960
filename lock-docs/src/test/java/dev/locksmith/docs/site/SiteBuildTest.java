package dev.locksmith.docs.site;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Builds the site into {@code target/site} (so {@code mvn test} and every later phase have it), and
 * checks that the generator refuses what would make a page lie: a missing sample or tag.
 */
class SiteBuildTest {

  static Path moduleDir() {
    return Path.of(System.getProperty("basedir", ".")).toAbsolutePath().normalize();
  }

  @Test
  void buildsEveryPageOfTheNavigation() throws Exception {
    List<String> packages = ApiReference.generate(moduleDir()); // the site links to it
    checkApiReference(packages);
    SiteGenerator generator = new SiteGenerator(moduleDir());
    List<SiteGenerator.Page> pages = generator.build();
    generator.notes().forEach(n -> System.out.println("note: " + n));
    assertThat(pages).hasSizeGreaterThan(20);
    for (SiteGenerator.Page page : pages) {
      if (page.built()) {
        continue; // the API reference, checked above
      }
      Path html = generator.outDir().resolve(page.file());
      assertThat(html).isRegularFile();
      String text = Files.readString(html);
      assertThat(text)
          .contains("<nav>")
          .contains("<main>")
          .doesNotContain("{{sample:", "{{include:");
    }
    String start = Files.readString(generator.outDir().resolve("getting-started.html"));
    assertThat(start).contains("Locks.connect(&quot;local:&quot;)").doesNotContain("tag::");
    String index = Files.readString(generator.outDir().resolve("index.html"));
    assertThat(index).contains("<a href=\"api/index.html\">API reference (javadoc)</a>");
  }

  /** The API reference has every library's public packages, the SPI, and nothing internal. */
  private static void checkApiReference(List<String> packages) throws Exception {
    Path api = ApiReference.outDir(moduleDir());
    assertThat(packages)
        .contains(
            "dev.locksmith",
            "dev.locksmith.spi",
            "dev.locksmith.local",
            "dev.locksmith.tck",
            "dev.locksmith.redis",
            "dev.locksmith.redlock",
            "dev.locksmith.jdbc",
            "dev.locksmith.zookeeper",
            "dev.locksmith.etcd",
            "dev.locksmith.micrometer",
            "dev.locksmith.spring",
            "dev.locksmith.shedlock",
            "dev.locksmith.spring.integration")
        .noneMatch(ApiReference::isInternal);
    assertThat(Files.readAllLines(api.resolve("element-list")))
        .containsExactlyInAnyOrderElementsOf(packages);
    for (String page :
        List.of(
            "index.html",
            "dev/locksmith/LockClient.html",
            "dev/locksmith/spi/LockProvider.html",
            "dev/locksmith/spring/Locked.html",
            "dev/locksmith/shedlock/LocksmithLockProvider.html",
            "dev/locksmith/tck/LockCompatibilityKit.html")) {
      assertThat(api.resolve(page)).isRegularFile();
    }
    try (Stream<Path> files = Files.walk(api)) {
      assertThat(files.map(f -> api.relativize(f).toString()))
          .noneMatch(f -> f.contains("internal"))
          .noneMatch(f -> f.endsWith("Test.html") || f.endsWith("IT.html"));
    }
    assertThat(Files.readString(api.resolve("dev/locksmith/LockClient.html")))
        .contains("Interface LockClient")
        .contains("../../../index.html\">Locksmith documentation site</a>");
  }

  @Test
  void everyModuleWithMainSourcesIsInTheApiReferenceOrSaysWhyNot() throws Exception {
    Path root = moduleDir().getParent();
    String pom = Files.readString(root.resolve("pom.xml"));
    Matcher m = Pattern.compile("<module>([^<]+)</module>").matcher(pom);
    List<String> withSources = new ArrayList<>();
    while (m.find()) {
      Path module = root.resolve(m.group(1));
      if (!ApiReference.packagesOf(module.resolve("src/main/java")).isEmpty()
          || Files.isDirectory(module.resolve("src/main/kotlin"))) {
        withSources.add(m.group(1));
      }
    }
    assertThat(withSources).contains("lock-api", "lock-spring-boot-starter", "lock-kotlin");
    for (String module : withSources) {
      assertThat(
              ApiReference.LIBRARIES.containsKey(module)
                  || ApiReference.NOT_LIBRARIES.containsKey(module))
          .as(module + ": add it to ApiReference.LIBRARIES, or to NOT_LIBRARIES saying why")
          .isTrue();
    }
    assertThat(ApiReference.isInternal("dev.locksmith.redis.internal")).isTrue();
    assertThat(ApiReference.isInternal("dev.locksmith.internals")).isFalse();
  }

  @Test
  void aMissingSampleOrTagFailsTheBuild(@TempDir Path dir) throws Exception {
    Path module = dir.resolve("lock-docs");
    Files.createDirectories(module.resolve("src/site-md"));
    Path samples = module.resolve("src/test/java/dev/locksmith/docs/samples");
    Files.createDirectories(samples);
    Files.writeString(
        samples.resolve("S.java"), "class S {\n  // tag::ok[]\n  int x;\n  // end::ok[]\n}\n");
    Files.writeString(module.resolve("src/site-md/nav.txt"), "A | index | Home | index.md\n");

    Files.writeString(module.resolve("src/site-md/index.md"), "# Home\n\n{{sample:S#ok}}\n");
    new SiteGenerator(module).build();
    assertThat(Files.readString(module.resolve("target/site/index.html"))).contains("int x;");

    Files.writeString(module.resolve("src/site-md/index.md"), "# Home\n\n{{sample:S#gone}}\n");
    assertThatThrownBy(() -> new SiteGenerator(module).build())
        .hasMessageContaining("tag 'gone' not found");

    Files.writeString(module.resolve("src/site-md/index.md"), "# Home\n\n{{sample:Nope#ok}}\n");
    assertThatThrownBy(() -> new SiteGenerator(module).build())
        .hasMessageContaining("Nope.java is missing");

    Files.writeString(module.resolve("src/site-md/index.md"), "# Home\n\n[x](other.html#y)\n");
    assertThatThrownBy(() -> new SiteGenerator(module).build())
        .hasMessageContaining("finds no page");
  }
}
