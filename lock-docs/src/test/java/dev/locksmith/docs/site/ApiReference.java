package dev.locksmith.docs.site;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import java.util.spi.ToolProvider;
import java.util.stream.Stream;

/**
 * The site's API reference: the JDK's javadoc over the main sources of the library modules, into
 * {@code target/site/api}, one package group per module.
 *
 * <p>Only public and protected types are documented (the implementations are package-private),
 * packages with a segment named {@code internal} are left out, and test sources are never read. A
 * missing comment is not reported; an error (a source that does not compile against the class path,
 * a broken reference or bad HTML in a comment) fails the run with javadoc's own output.
 *
 * <p>It runs in the test JVM with the module's test class path, which holds every library module
 * and what each leaves to the application (see {@code lock-docs/pom.xml}): no plugin to resolve,
 * and the same javadoc as the JDK that builds the rest.
 */
public final class ApiReference {

  /** The library modules of the repository and the title of their group in the reference. */
  static final Map<String, String> LIBRARIES = libraries();

  /**
   * The modules of the root POM with main sources that are not libraries, and why; a module that is
   * in neither map fails {@code SiteBuildTest}, so a new module is not forgotten.
   */
  static final Map<String, String> NOT_LIBRARIES =
      Map.of(
          "lock-cli", "the lockctl command-line tool, documented by its README page",
          "lock-bench", "the benchmarks, run by run-bench.sh",
          "lock-kotlin",
              "Kotlin only (the JDK's javadoc cannot read it): its KDoc and its README page",
          "examples/spring-boot-demo", "an example application, a page of its own",
          "examples/kotlin-webflux-demo", "an example application, on the examples page");

  private static Map<String, String> libraries() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("lock-api", "API, SPI and local: (lock-api)");
    m.put("lock-tck", "Compatibility kit (lock-tck)");
    m.put("lock-redis", "Redis (lock-redis)");
    m.put("lock-redlock", "Redlock (lock-redlock)");
    m.put("lock-jdbc", "JDBC (lock-jdbc)");
    m.put("lock-zookeeper", "ZooKeeper (lock-zookeeper)");
    m.put("lock-etcd", "etcd (lock-etcd)");
    m.put("lock-micrometer", "Micrometer (lock-micrometer)");
    m.put("lock-reactor", "Reactor (lock-reactor)");
    m.put("lock-spring-boot-starter", "Spring Boot starter (lock-spring-boot-starter)");
    m.put("lock-shedlock", "ShedLock provider (lock-shedlock)");
    m.put("lock-spring-integration", "Spring Integration (lock-spring-integration)");
    return Collections.unmodifiableMap(m);
  }

  private ApiReference() {}

  /** The reference's directory in the site. */
  public static Path outDir(Path moduleDir) {
    return moduleDir.toAbsolutePath().normalize().resolve("target/site/api");
  }

  /**
   * Writes the reference, replacing any earlier one.
   *
   * @return the packages documented, in order
   * @throws IllegalStateException with javadoc's output if javadoc fails
   */
  public static List<String> generate(Path moduleDir) {
    Path repoRoot = moduleDir.toAbsolutePath().normalize().getParent();
    Path out = outDir(moduleDir);
    deleteTree(out);

    List<String> sourcepath = new ArrayList<>();
    List<String> packages = new ArrayList<>();
    List<String> args = new ArrayList<>();
    for (Map.Entry<String, String> module : LIBRARIES.entrySet()) {
      Path src = repoRoot.resolve(module.getKey()).resolve("src/main/java");
      List<String> own = packagesOf(src);
      if (own.isEmpty()) {
        throw new IllegalStateException("no public sources in " + src);
      }
      sourcepath.add(src.toString());
      packages.addAll(own);
      args.addAll(List.of("-group", module.getValue(), String.join(":", own)));
    }
    args.addAll(
        List.of(
            "-quiet",
            "-Xdoclint:all,-missing",
            "-encoding",
            "UTF-8",
            "-notimestamp",
            "-d",
            out.toString(),
            "-doctitle",
            "Locksmith API reference",
            "-windowtitle",
            "Locksmith API reference",
            "-bottom",
            "<a href=\"{@docRoot}/../index.html\">Locksmith documentation site</a>",
            "-classpath",
            String.join(java.io.File.pathSeparator, testClassPath()),
            "-sourcepath",
            String.join(java.io.File.pathSeparator, sourcepath)));
    args.addAll(packages);

    ToolProvider javadoc =
        ToolProvider.findFirst("javadoc")
            .orElseThrow(() -> new IllegalStateException("no javadoc tool in this JDK"));
    StringWriter output = new StringWriter();
    int exit;
    try (PrintWriter w = new PrintWriter(output)) {
      exit = javadoc.run(w, w, args.toArray(String[]::new));
    }
    if (exit != 0 || !Files.isRegularFile(out.resolve("index.html"))) {
      throw new IllegalStateException("javadoc failed (exit " + exit + "):\n" + output);
    }
    if (!output.toString().isBlank()) {
      System.out.println("javadoc:\n" + output);
    }
    return List.copyOf(packages);
  }

  /** The packages under a source root that have Java sources, none of them internal. */
  static List<String> packagesOf(Path sourceRoot) {
    if (!Files.isDirectory(sourceRoot)) {
      return List.of();
    }
    TreeSet<String> packages = new TreeSet<>();
    try (Stream<Path> files = Files.walk(sourceRoot)) {
      files
          .filter(f -> f.toString().endsWith(".java"))
          .filter(f -> !f.getFileName().toString().equals("module-info.java"))
          .map(f -> sourceRoot.relativize(f.getParent()))
          .filter(dir -> dir.getNameCount() > 0 && !dir.toString().isEmpty())
          .map(dir -> dir.toString().replace(java.io.File.separatorChar, '.'))
          .filter(p -> !isInternal(p))
          .forEach(packages::add);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return List.copyOf(packages);
  }

  static boolean isInternal(String packageName) {
    return List.of(packageName.split("\\.")).contains("internal");
  }

  /**
   * The test class path of this JVM. Surefire may start it with one jar whose manifest names the
   * class path; that jar is opened up.
   */
  static List<String> testClassPath() {
    List<String> entries = new ArrayList<>();
    for (String e : System.getProperty("java.class.path", "").split(java.io.File.pathSeparator)) {
      if (e.isBlank()) {
        continue;
      }
      Path p = Path.of(e);
      List<String> manifestPath = manifestClassPath(p);
      if (manifestPath.isEmpty()) {
        entries.add(e);
      } else {
        entries.addAll(manifestPath);
      }
    }
    return entries;
  }

  private static List<String> manifestClassPath(Path jar) {
    if (!jar.toString().endsWith(".jar") || !Files.isRegularFile(jar)) {
      return List.of();
    }
    try (JarFile file = new JarFile(jar.toFile())) {
      Manifest manifest = file.getManifest();
      String cp =
          manifest == null
              ? null
              : manifest.getMainAttributes().getValue(Attributes.Name.CLASS_PATH);
      if (cp == null || cp.isBlank()) {
        return List.of();
      }
      URI base = jar.toAbsolutePath().getParent().toUri();
      List<String> entries = new ArrayList<>();
      for (String ref : cp.strip().split("\\s+")) {
        entries.add(Path.of(base.resolve(ref)).toString());
      }
      return entries;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void deleteTree(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(f);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Writes the reference of the module in the working directory. */
  public static void main(String[] args) {
    List<String> packages = generate(Path.of(args.length > 0 ? args[0] : "."));
    System.out.println(packages.size() + " packages documented");
  }
}
