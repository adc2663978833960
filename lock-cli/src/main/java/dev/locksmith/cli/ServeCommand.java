package dev.locksmith.cli;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.locksmith.HeldLock;
import dev.locksmith.LockClient;
import dev.locksmith.LockException;
import dev.locksmith.LockState;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code lockctl serve}: a small web page with the locks held under a prefix, their holders, tokens
 * and remaining leases, refreshed every second, served on the loopback interface by the JDK's own
 * HTTP server. Read only unless started with {@code --allow-break}, which adds a break-glass button
 * per lock.
 */
final class ServeCommand {
  static final String USAGE =
      String.join(
          "\n",
          "usage: lockctl serve [--backend URI | --config FILE] [--port P] [--allow-break]"
              + " [PREFIX]",
          "",
          "Serves a web page at http://127.0.0.1:P/ with the locks held under PREFIX (every lock"
              + " without it):",
          "name, fencing token, remaining lease and holder, refreshed every second, until"
              + " interrupted. Read only,",
          "unless --allow-break: then each lock has a break-glass button (lockctl break, with a"
              + " reason and a",
          "confirmation). Only the loopback interface is served. On backends that declare"
              + " LISTING.",
          "",
          "  --backend URI   the lock backend, such as redis://host:6379 (default: LOCKSMITH_URI)",
          "  --config FILE   a properties file with locksmith.uri and other settings",
          "  --port P        the port, 1 to 65535 (default 7070; 0 picks a free one)",
          "  --allow-break   allow breaking locks from the page",
          "",
          "exit status: 1 not supported by the backend, 2 bad command line, 69 backend"
              + " unreachable, 78 bad backend",
          "configuration; runs until interrupted otherwise");

  private static final Pattern BREAK_BODY =
      Pattern.compile(
          "\\{\\s*\"name\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"\\s*,\\s*\"reason\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"\\s*\\}");

  private final PrintStream out;

  ServeCommand(PrintStream out) {
    this.out = out;
  }

  int run(List<String> argv) throws InterruptedException {
    Args args =
        Args.parse(argv, Set.of("backend", "config", "port"), Set.of("help", "allow-break"));
    if (args.flag("help")) {
      out.println(USAGE);
      return Main.OK;
    }
    String prefix = ListCommand.prefix(args);
    int port = 7070;
    String portText = args.get("port");
    if (portText != null) {
      try {
        port = Integer.parseInt(portText.trim());
      } catch (NumberFormatException e) {
        port = -1;
      }
      if (port < 0 || port > 65535) {
        throw new Args.UsageException(
            "--port was '" + portText + "' but it must be a whole number from 0 to 65535");
      }
    }
    boolean allowBreak = args.flag("allow-break");
    Backends.Backend backend = Backends.resolve(args, null);
    try (LockClient client = backend.connect()) {
      if (!ListCommand.supported(out, "lockctl serve", client, backend)) {
        return Main.FAILED;
      }
      ListCommand.listAll(client, prefix, 1, 1); // a PREFIX no name can begin with: refused now
      HttpServer server;
      try {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 16);
      } catch (IOException e) {
        throw new Args.UsageException(
            "--port was " + port + " but it cannot be served on 127.0.0.1: " + e.getMessage());
      }
      server.setExecutor(
          Executors.newFixedThreadPool(
              4,
              r -> {
                Thread t = new Thread(r, "lockctl-serve");
                t.setDaemon(true);
                return t;
              }));
      server.createContext(
          "/",
          ex -> {
            try (ex) {
              if (!"/".equals(ex.getRequestURI().getPath())) {
                send(ex, 404, "text/plain", "not found");
              } else {
                send(ex, 200, "text/html; charset=utf-8", page(backend.display(), prefix));
              }
            }
          });
      server.createContext(
          "/locks.json",
          ex -> {
            try (ex) {
              try {
                send(ex, 200, "application/json", json(client, prefix, allowBreak));
              } catch (LockException e) {
                send(ex, 503, "application/json", "{\"error\":" + quote(e.getMessage()) + "}");
              }
            }
          });
      server.createContext(
          "/break",
          ex -> {
            try (ex) {
              breakLock(ex, client, allowBreak);
            }
          });
      server.start();
      out.println(
          "lockctl serve: http://127.0.0.1:"
              + server.getAddress().getPort()
              + "/ shows the locks held"
              + (prefix.isEmpty() ? "" : " under '" + prefix + "'")
              + " on "
              + backend.display()
              + (allowBreak ? " (breaking allowed)" : " (read only)")
              + "; interrupt to stop");
      out.flush();
      try {
        new CountDownLatch(1).await(); // until the JVM is stopped (SIGINT, SIGTERM)
      } finally {
        server.stop(0);
      }
      return Main.OK;
    }
  }

  private void breakLock(HttpExchange ex, LockClient client, boolean allowBreak)
      throws IOException {
    if (!"POST".equals(ex.getRequestMethod())) {
      send(ex, 405, "text/plain", "POST only");
      return;
    }
    if (!allowBreak) {
      send(ex, 403, "text/plain", "read only: start lockctl serve with --allow-break");
      return;
    }
    // a header a cross-site form cannot send, and no CORS answer lets a script of another site
    // send it
    if (!"1".equals(ex.getRequestHeaders().getFirst("X-Locksmith-Break"))) {
      send(ex, 403, "text/plain", "missing header X-Locksmith-Break: 1");
      return;
    }
    String body;
    try (InputStream in = ex.getRequestBody()) {
      body = new String(in.readNBytes(8192), StandardCharsets.UTF_8);
    }
    Matcher m = BREAK_BODY.matcher(body);
    if (!m.matches()) {
      send(ex, 400, "text/plain", "the body must be {\"name\": \"...\", \"reason\": \"...\"}");
      return;
    }
    String name = unquote(m.group(1));
    String reason = unquote(m.group(2)) + " (from lockctl serve)";
    try {
      boolean broken = client.breakLock(name, reason);
      send(ex, 200, "application/json", "{\"broken\":" + broken + "}");
    } catch (IllegalArgumentException | UnsupportedOperationException e) {
      send(ex, 400, "text/plain", e.getMessage());
    } catch (LockException e) {
      send(ex, 503, "text/plain", e.getMessage());
    }
  }

  private static void send(HttpExchange ex, int status, String type, String body)
      throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    ex.getResponseHeaders().set("Content-Type", type);
    ex.getResponseHeaders().set("Cache-Control", "no-store");
    ex.getResponseHeaders().set("X-Content-Type-Options", "nosniff");
    ex.sendResponseHeaders(status, bytes.length);
    try (OutputStream os = ex.getResponseBody()) {
      os.write(bytes);
    }
  }

  /** The held locks as JSON: every page of the listing. */
  static String json(LockClient client, String prefix, boolean allowBreak) {
    List<HeldLock> all = ListCommand.listAll(client, prefix, 200, 5000);
    StringBuilder b =
        new StringBuilder("{\"allowBreak\":").append(allowBreak).append(",\"locks\":[");
    boolean first = true;
    for (HeldLock l : all) {
      for (LockState s : l.holders()) { // an entry a holder, as lockctl ls prints them
        b.append(first ? "" : ",").append("{\"name\":").append(quote(l.name()));
        first = false;
        b.append(",\"kind\":").append(quote(ListCommand.kind(l)));
        if (s.fencingToken().isPresent()) {
          b.append(",\"token\":").append(s.fencingToken().getAsLong());
        }
        if (s.remaining().isPresent()) {
          b.append(",\"remainingMillis\":").append(s.remaining().get().toMillis());
        }
        if (l.waiting().isPresent()) {
          b.append(",\"waiting\":").append(l.waiting().getAsInt());
        }
        String holder = s.holderIdentity().map(Object::toString).orElse(s.holder().orElse(null));
        if (holder != null) {
          b.append(",\"holder\":").append(quote(holder));
        }
        b.append('}');
      }
    }
    return b.append("]}").toString();
  }

  /** A JSON string. */
  static String quote(String s) {
    StringBuilder b = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '<' -> b.append("\\u003c"); // never "</script>" in a page
        default -> {
          if (c < 0x20 || c == 0x2028 || c == 0x2029) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.append('"').toString();
  }

  /** The text of a JSON string's inside (the escapes {@link #quote} and browsers write). */
  static String unquote(String s) {
    StringBuilder b = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c != '\\' || i + 1 == s.length()) {
        b.append(c);
        continue;
      }
      char e = s.charAt(++i);
      switch (e) {
        case 'n' -> b.append('\n');
        case 't' -> b.append('\t');
        case 'r' -> b.append('\r');
        case 'b' -> b.append('\b');
        case 'f' -> b.append('\f');
        case 'u' -> {
          if (i + 4 < s.length()) {
            b.append((char) Integer.parseInt(s.substring(i + 1, i + 5), 16));
            i += 4;
          }
        }
        default -> b.append(e);
      }
    }
    return b.toString();
  }

  /** The page: a table filled from /locks.json every second, names shown as text, never HTML. */
  static String page(String backend, String prefix) {
    String title =
        "Locksmith: locks held on " + backend + (prefix.isEmpty() ? "" : " under " + prefix);
    return String.join(
        "\n",
        "<!DOCTYPE html>",
        "<html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<title>Locksmith locks</title>",
        "<style>",
        "body{font-family:system-ui,sans-serif;margin:2em;color:#222}",
        "table{border-collapse:collapse;width:100%}",
        "th,td{text-align:left;padding:.3em .8em;border-bottom:1px solid #ddd}",
        "td.n{text-align:right;font-variant-numeric:tabular-nums}",
        "#status{color:#666}",
        "</style></head><body>",
        "<h1 id=\"title\"></h1>",
        "<p id=\"status\">loading…</p>",
        "<table><thead><tr><th>Name</th><th>Kind</th><th>Token</th><th>Remaining</th>"
            + "<th>Waiting</th><th>Holder</th>"
            + "<th></th></tr></thead><tbody id=\"locks\"></tbody></table>",
        "<script>",
        "document.getElementById('title').textContent = " + quote(title) + ";",
        "function cell(row, text, cls) {",
        "  const td = document.createElement('td');",
        "  td.textContent = text; if (cls) td.className = cls; row.appendChild(td); return td;",
        "}",
        "async function breakLock(name) {",
        "  const reason = prompt('Break lock ' + name + '? Its holder loses its lease. Reason:');",
        "  if (!reason) return;",
        "  const r = await fetch('break', {method: 'POST', headers: {'Content-Type':"
            + " 'application/json', 'X-Locksmith-Break': '1'},",
        "    body: JSON.stringify({name: name, reason: reason})});",
        "  alert(r.ok ? 'broken' : 'not broken: ' + await r.text());",
        "  refresh();",
        "}",
        "async function refresh() {",
        "  try {",
        "    const r = await fetch('locks.json', {cache: 'no-store'});",
        "    const data = await r.json();",
        "    if (!r.ok) throw new Error(data.error || r.status);",
        "    const body = document.getElementById('locks');",
        "    body.replaceChildren();",
        "    for (const l of data.locks) {",
        "      const row = document.createElement('tr');",
        "      row.className = 'lock';",
        "      cell(row, l.name).className = 'name';",
        "      cell(row, l.kind);",
        "      cell(row, l.token === undefined ? '-' : String(l.token), 'n');",
        "      cell(row, l.remainingMillis === undefined ? 'session' : (l.remainingMillis / 1000)"
            + ".toFixed(1) + ' s', 'n');",
        "      cell(row, l.waiting === undefined ? '-' : String(l.waiting), 'n');",
        "      cell(row, l.holder || '');",
        "      const act = cell(row, '');",
        "      if (data.allowBreak && l.kind === 'lock') {",
        "        const b = document.createElement('button');",
        "        b.textContent = 'break'; b.onclick = () => breakLock(l.name); act.appendChild(b);",
        "      }",
        "      body.appendChild(row);",
        "    }",
        "    document.getElementById('status').textContent = data.locks.length + ' held, at ' +"
            + " new Date().toLocaleTimeString();",
        "  } catch (e) {",
        "    document.getElementById('status').textContent = 'cannot read the locks: ' +"
            + " e.message;",
        "  }",
        "}",
        "refresh();",
        "setInterval(refresh, 1000);",
        "</script></body></html>");
  }
}
