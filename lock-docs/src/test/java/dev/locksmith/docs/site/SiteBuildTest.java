package dev.locksmith.docs.site;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
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
    SiteGenerator generator = new SiteGenerator(moduleDir());
    List<SiteGenerator.Page> pages = generator.build();
    generator.notes().forEach(n -> System.out.println("note: " + n));
    assertThat(pages).hasSizeGreaterThan(20);
    for (SiteGenerator.Page page : pages) {
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
