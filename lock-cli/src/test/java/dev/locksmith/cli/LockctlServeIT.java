package dev.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import dev.locksmith.redis.RedisServerExtension;
import java.io.File;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code lockctl serve} against a real redis-server, its page opened in headless Chromium (Debian's
 * {@code chromium}, installed by {@code .ci/install}; missing, it is a failure): the page shows a
 * lock the test takes, with its holder, and no longer shows it once released; names are shown as
 * text, never as HTML; breaking needs {@code --allow-break} and the page's own header.
 */
class LockctlServeIT {
  @RegisterExtension
  static final RedisServerExtension REDIS = RedisServerExtension.single("lockctl-serve");

  private static final Pattern SERVING = Pattern.compile("http://127\\.0\\.0\\.1:(\\d+)/");

  static RedisFixture redis;
  static LockClient client;

  @BeforeAll
  static void startRedis() {
    redis = RedisFixture.on(REDIS);
    client = Locks.connect(redis.uri() + "?application=serve-it");
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

  /** Starts lockctl serve on a free port; returns its base URL once it serves. */
  private static String serve(Lockctl serve) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      Matcher m = SERVING.matcher(serve.stdoutSoFar());
      if (m.find()) {
        return "http://127.0.0.1:" + m.group(1) + "/";
      }
      assertThat(serve.isAlive()).as("lockctl serve runs: %s", serve.stderrSoFar()).isTrue();
      Thread.sleep(50);
    }
    throw new AssertionError("lockctl serve did not say where it serves within 60 s");
  }

  @Test
  void thePageShowsAHeldLockWithItsHolderAndNotOnceReleased() throws Exception {
    String chromium = chromium();
    Lockctl serve = Lockctl.start("serve", "--backend", redis.uri(), "--port", "0", "page/");
    try {
      String base = serve(serve);
      String xss = "page/<img src=x onerror=alert(1)>";
      try (Lease lease = client.lock("page/report").acquire(Duration.ofSeconds(5));
          Lease odd = client.lock(xss).acquire(Duration.ofSeconds(5));
          Lease outside = client.lock("elsewhere").acquire(Duration.ofSeconds(5))) {
        String dom = open(chromium, base);
        assertThat(dom).contains("<td class=\"name\">page/report</td>");
        assertThat(dom).contains("serve-it on ").contains("2 held, at ");
        assertThat(dom).contains(">" + lease.fencingToken() + "<");
        assertThat(dom).doesNotContain("elsewhere");
        assertThat(dom)
            .as("a name is text, never HTML")
            .contains("page/&lt;img src=x onerror=alert(1)&gt;")
            .doesNotContain("<img src=\"x\"");
        assertThat(dom).doesNotContain("<button>break</button>");
      }
      String after = open(chromium, base);
      assertThat(after).doesNotContain("page/report").contains("0 held, at ");
      HttpClient http = HttpClient.newHttpClient();
      HttpResponse<String> refused =
          http.send(
              HttpRequest.newBuilder(URI.create(base + "break"))
                  .header("X-Locksmith-Break", "1")
                  .POST(HttpRequest.BodyPublishers.ofString("{\"name\":\"x\",\"reason\":\"y\"}"))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(refused.statusCode()).as("read only: %s", refused.body()).isEqualTo(403);
    } finally {
      serve.signal("TERM");
      serve.finish(Duration.ofSeconds(30));
    }
  }

  @Test
  void withAllowBreakThePageBreaksOnlyWithItsHeader() throws Exception {
    Lockctl serve =
        Lockctl.start("serve", "--backend", redis.uri(), "--port", "0", "--allow-break", "brk/");
    try {
      String base = serve(serve);
      Lease lease = client.lock("brk/stuck").acquire(Duration.ofSeconds(5));
      HttpClient http = HttpClient.newHttpClient();
      String body = "{\"name\":\"brk/stuck\",\"reason\":\"it hangs\"}";
      HttpResponse<String> noHeader =
          http.send(
              HttpRequest.newBuilder(URI.create(base + "break"))
                  .POST(HttpRequest.BodyPublishers.ofString(body))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(noHeader.statusCode())
          .as("without the header: %s", noHeader.body())
          .isEqualTo(403);
      assertThat(lease.isValid()).isTrue();
      String json =
          http.send(
                  HttpRequest.newBuilder(URI.create(base + "locks.json")).build(),
                  HttpResponse.BodyHandlers.ofString())
              .body();
      assertThat(json)
          .contains("\"allowBreak\":true")
          .contains("\"name\":\"brk/stuck\"")
          .contains("\"token\":" + lease.fencingToken());
      HttpResponse<String> broken =
          http.send(
              HttpRequest.newBuilder(URI.create(base + "break"))
                  .header("X-Locksmith-Break", "1")
                  .header("Content-Type", "application/json")
                  .POST(HttpRequest.BodyPublishers.ofString(body))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(broken.statusCode()).as("%s", broken.body()).isEqualTo(200);
      assertThat(broken.body()).isEqualTo("{\"broken\":true}");
      lease.lost().toCompletableFuture().get(10, TimeUnit.SECONDS);
      assertThat(client.lock("brk/stuck").state().isHeld()).isFalse();
    } finally {
      serve.signal("TERM");
      serve.finish(Duration.ofSeconds(30));
    }
  }

  @Test
  void aBadPortIsRefused() throws Exception {
    Lockctl.Result r = Lockctl.run("serve", "--backend", redis.uri(), "--port", "70000");
    assertThat(r.exit).as("%s", r).isEqualTo(2);
    assertThat(r.err).contains("--port was '70000' but it must be a whole number from 0 to 65535");
  }

  /** The page's DOM once its scripts ran (virtual time: the first listing and a refresh). */
  private static String open(String chromium, String url) throws Exception {
    Path profile = Files.createTempDirectory("lockctl-serve-chromium");
    Path out = Files.createTempFile("lockctl-serve", ".html");
    Path err = Files.createTempFile("lockctl-serve", ".err");
    Process p =
        new ProcessBuilder(
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--user-data-dir=" + profile,
                "--virtual-time-budget=2500",
                "--dump-dom",
                url)
            .redirectOutput(out.toFile())
            .redirectError(err.toFile())
            .start();
    if (!p.waitFor(2, TimeUnit.MINUTES)) {
      p.destroyForcibly();
      fail("chromium did not finish opening " + url + " in 2 minutes");
    }
    String html = Files.readString(out, StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as("chromium's exit on %s: %s", url, Files.readString(err)).isZero();
    assertThat(html).as("the DOM of %s", url).contains("<table>");
    return html;
  }

  private static String chromium() {
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
    return fail(
        "chromium is not installed: the live page's browser test needs it (run .ci/install, or"
            + " apt-get install chromium)");
  }
}
