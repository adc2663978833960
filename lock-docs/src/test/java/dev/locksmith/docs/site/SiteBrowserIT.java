package dev.locksmith.docs.site;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Opens the built site in headless Chromium (Debian's {@code chromium}): every page, as the browser
 * parsed it ({@code --dump-dom}), starting from {@code index.html} and following every internal
 * link. Fails on a link to a page that does not exist, a link to a heading the page does not have,
 * an image that is missing, an empty code block, a page without navigation or content, and a built
 * page that no link reaches. A missing {@code chromium} is a failure, never a skip: {@code
 * .ci/install} installs it.
 *
 * <p>The API reference ({@code api/}, javadoc) is not crawled, only its entry points: the
 * navigation must link to its index, and its index and one class page are opened, must have what
 * javadoc writes there, and every link on them into the site must find its file.
 */
class SiteBrowserIT {
  private static final Pattern HREF = Pattern.compile("<a\\s[^>]*?href=\"([^\"]*)\"");
  private static final Pattern SRC = Pattern.compile("<img\\s[^>]*?src=\"([^\"]*)\"");
  private static final Pattern ID = Pattern.compile("\\sid=\"([^\"]*)\"");
  private static final Pattern CODE =
      Pattern.compile("<pre[^>]*>\\s*<code[^>]*>(.*?)</code>\\s*</pre>", Pattern.DOTALL);
  private static final Pattern TITLE = Pattern.compile("<title>(.*?)</title>", Pattern.DOTALL);
  private static final Pattern MAIN = Pattern.compile("<main>(.*?)</main>", Pattern.DOTALL);

  /** A page as the browser saw it. */
  private record Dom(String html, Set<String> ids) {}

  @Test
  void everyPageOpensAndEveryInternalLinkLands(@TempDir Path profiles) throws Exception {
    String chromium = findChromium();
    Path site = SiteBuildTest.moduleDir().resolve("target/site");
    if (!Files.isRegularFile(site.resolve("index.html"))) {
      ApiReference.generate(SiteBuildTest.moduleDir()); // run alone, without the unit tests
      new SiteGenerator(SiteBuildTest.moduleDir()).build();
    }
    Path root = site.toRealPath();

    Path api = root.resolve("api");
    Map<Path, Dom> doms = new LinkedHashMap<>();
    Set<Path> apiLinked = new HashSet<>();
    List<String> problems = new ArrayList<>();
    Deque<Path> queue = new ArrayDeque<>();
    Set<Path> seen = new HashSet<>();
    queue.add(root.resolve("index.html"));
    seen.add(root.resolve("index.html"));
    // Two browsers at a time: fast enough, and gentle with a loaded two-core machine.
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      while (!queue.isEmpty()) {
        List<Path> batch = new ArrayList<>(queue);
        queue.clear();
        Map<Path, Future<Dom>> opened = new LinkedHashMap<>();
        for (Path page : batch) {
          opened.put(page, pool.submit(() -> open(chromium, page, profiles)));
        }
        for (Map.Entry<Path, Future<Dom>> e : opened.entrySet()) {
          Path page = e.getKey();
          Dom dom = e.getValue().get(5, TimeUnit.MINUTES);
          doms.put(page, dom);
          for (String href : matches(HREF, dom.html())) {
            Path target = internalTarget(root, page, href, problems);
            if (target != null && target.startsWith(api)) {
              apiLinked.add(target); // the javadoc: its entry points are checked below
            } else if (target != null && Files.isRegularFile(target) && seen.add(target)) {
              queue.add(target);
            }
          }
        }
      }
    } finally {
      pool.shutdownNow();
    }

    for (Map.Entry<Path, Dom> e : doms.entrySet()) {
      checkPage(root, e.getKey(), e.getValue(), doms, problems);
    }
    try (Stream<Path> files = Files.list(root)) {
      files
          .filter(f -> f.toString().endsWith(".html"))
          .filter(f -> !doms.containsKey(f))
          .forEach(f -> problems.add(f.getFileName() + ": built but no link reaches it"));
    }
    checkApiReference(chromium, root, api, apiLinked, profiles, problems);
    System.out.println("browser check: " + doms.size() + " pages opened in " + chromium);
    assertThat(doms).hasSizeGreaterThan(20);
    if (!problems.isEmpty()) {
      fail(
          "the site has "
              + problems.size()
              + " problem(s):\n  - "
              + String.join("\n  - ", new TreeSet<>(problems)));
    }
  }

  /**
   * The javadoc's entry points: the navigation links to its index; the index and the page of {@code
   * LockClient} open with what javadoc puts there, and their links into the site land.
   */
  private static void checkApiReference(
      String chromium,
      Path root,
      Path api,
      Set<Path> apiLinked,
      Path profiles,
      List<String> problems)
      throws IOException, InterruptedException {
    Path index = api.resolve("index.html");
    Path classPage = api.resolve("dev/locksmith/LockClient.html");
    if (!apiLinked.contains(index)) {
      problems.add("api/index.html: the navigation does not link to the API reference");
    }
    for (Path page : List.of(index, classPage)) {
      String name = root.relativize(page).toString();
      if (!Files.isRegularFile(page)) {
        problems.add(name + ": the API reference has no such page");
        continue;
      }
      String html = open(chromium, page, profiles).html();
      List<String> titles = matches(TITLE, html);
      if (titles.isEmpty() || !titles.get(0).contains("Locksmith API reference")) {
        problems.add(name + ": not a page of the API reference (title " + titles + ")");
      }
      List<String> links = new ArrayList<>();
      for (String href : matches(HREF, html)) {
        if (href.startsWith("javascript:")) {
          continue;
        }
        Path target = internalTarget(root, page, href, problems);
        if (target == null) {
          continue;
        }
        links.add(root.relativize(target).toString());
        if (!Files.isRegularFile(target)) {
          problems.add(name + ": link to '" + href + "': no such file");
        }
      }
      List<String> want =
          page.equals(index)
              ? List.of(
                  "api/dev/locksmith/package-summary.html",
                  "api/dev/locksmith/spi/package-summary.html",
                  "index.html")
              : List.of("api/dev/locksmith/package-summary.html", "index.html");
      for (String w : want) {
        if (!links.contains(w)) {
          problems.add(name + ": no link to " + w);
        }
      }
      if (page.equals(classPage) && !html.contains("Interface LockClient")) {
        problems.add(name + ": does not document interface LockClient");
      }
    }
  }

  private static void checkPage(
      Path root, Path page, Dom dom, Map<Path, Dom> doms, List<String> problems) {
    String name = root.relativize(page).toString();
    String html = dom.html();
    List<String> titles = matches(TITLE, html);
    if (titles.isEmpty() || titles.get(0).isBlank()) {
      problems.add(name + ": no title");
    }
    if (!html.contains("<nav>")) {
      problems.add(name + ": no navigation");
    }
    List<String> main = matches(MAIN, html);
    if (main.isEmpty() || text(main.get(0)).isBlank()) {
      problems.add(name + ": no content");
    }
    int block = 0;
    for (String code : matches(CODE, html)) {
      block++;
      if (text(code).isBlank()) {
        problems.add(name + ": code block " + block + " is empty");
      }
    }
    for (String href : matches(HREF, html)) {
      Path target = internalTarget(root, page, href, new ArrayList<>());
      if (target == null) {
        continue;
      }
      if (!Files.isRegularFile(target)) {
        problems.add(name + ": link to '" + href + "': no such page");
        continue;
      }
      int hash = href.indexOf('#');
      if (hash >= 0) {
        String id = decode(href.substring(hash + 1));
        Dom targetDom = doms.get(target);
        if (targetDom == null || !targetDom.ids().contains(id)) {
          problems.add(name + ": link to '" + href + "': no element with id '" + id + "' there");
        }
      }
    }
    for (String src : matches(SRC, html)) {
      if (src.contains("://") && !src.startsWith("file:")) {
        continue;
      }
      Path image = resolve(root, page, src);
      if (image == null || !Files.isRegularFile(image)) {
        problems.add(name + ": image '" + src + "' is missing");
      }
    }
  }

  /** The file a link leads to within the site, or null for an external link. */
  private static Path internalTarget(Path root, Path page, String href, List<String> problems) {
    String h = unescape(href);
    if (h.startsWith("http://") || h.startsWith("https://") || h.startsWith("mailto:")) {
      return null;
    }
    Path target = resolve(root, page, h);
    if (target == null) {
      problems.add(root.relativize(page) + ": link '" + href + "' leaves the site");
    }
    return target;
  }

  private static Path resolve(Path root, Path page, String ref) {
    String r = unescape(ref);
    int hash = r.indexOf('#');
    String path = hash >= 0 ? r.substring(0, hash) : r;
    Path target;
    if (path.isEmpty()) {
      target = page;
    } else if (path.startsWith("file:")) {
      target = Path.of(URI.create(path));
    } else {
      target = page.getParent().resolve(decode(path)).normalize();
    }
    return target.startsWith(root) ? target : null;
  }

  private static Dom open(String chromium, Path page, Path profiles)
      throws IOException, InterruptedException {
    Path profile = Files.createTempDirectory(profiles, "profile");
    Path out = Files.createTempFile(profiles, "dom", ".html");
    Path err = Files.createTempFile(profiles, "err", ".txt");
    Process p =
        new ProcessBuilder(
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--user-data-dir=" + profile,
                "--dump-dom",
                page.toUri().toString())
            .redirectOutput(out.toFile())
            .redirectError(err.toFile())
            .start();
    if (!p.waitFor(3, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      throw new IllegalStateException("chromium did not finish opening " + page + " in 3 minutes");
    }
    String html = Files.readString(out, StandardCharsets.UTF_8);
    if (p.exitValue() != 0 || html.isBlank()) {
      throw new IllegalStateException(
          "chromium failed on " + page + " (exit " + p.exitValue() + "): " + Files.readString(err));
    }
    return new Dom(html, new HashSet<>(matches(ID, html)));
  }

  private static String findChromium() {
    String override = System.getenv("CHROMIUM");
    if (override != null && !override.isBlank()) {
      return override;
    }
    for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
      for (String name : List.of("chromium", "chromium-browser")) {
        Path candidate = Path.of(dir, name);
        if (Files.isExecutable(candidate)) {
          return candidate.toString();
        }
      }
    }
    fail(
        "chromium is not installed: the site's browser check needs it (run .ci/install, or apt-get"
            + " install chromium)");
    return null;
  }

  private static List<String> matches(Pattern pattern, String html) {
    List<String> found = new ArrayList<>();
    Matcher m = pattern.matcher(html);
    while (m.find()) {
      found.add(m.group(1));
    }
    return found;
  }

  private static String text(String html) {
    return unescape(html.replaceAll("<[^>]*>", ""));
  }

  private static String unescape(String s) {
    return s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
  }

  private static String decode(String s) {
    return java.net.URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
  }
}
