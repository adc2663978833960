package dev.locksmith.cli;

import dev.locksmith.Guarantees;
import dev.locksmith.LockClient;
import dev.locksmith.LockException;
import dev.locksmith.spi.Durations;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * {@code lockctl demo}: several worker processes, each with a client of its own, take turns on one
 * lock and write through a fenced store that this process serves on loopback. One worker is frozen
 * with SIGSTOP while it holds the lock, past its lease, as a long GC pause or a stopped VM would
 * freeze it; its renewal stops with it. The timeline shows the lock passing on, each fencing token,
 * the loss signal, and the store refusing the frozen worker's late write.
 *
 * <p>With no backend given it runs on an H2 database in a temporary directory, opened by this
 * process and served to the workers by H2's AUTO_SERVER mode: no server to install.
 */
final class DemoCommand {
  static final String LOCK_NAME = "lockctl-demo/inventory";
  static final String USAGE =
      String.join(
          "\n",
          "usage: lockctl demo [--backend URI | --config FILE] [--workers N] [--rounds N] [--lease"
              + " D] [--pause D]",
          "",
          "Worker processes take turns on one lock and write through a store that refuses fencing"
              + " tokens",
          "lower than it has seen. One worker is frozen (SIGSTOP) for longer than its lease while"
              + " it holds",
          "the lock: the lock passes to another worker, and the frozen worker's late write is"
              + " refused.",
          "",
          "  --backend URI   the lock backend, shared by the worker processes (default:"
              + " LOCKSMITH_URI, else an",
          "                  embedded H2 database in a temporary directory, served to the workers"
              + " by this process)",
          "  --config FILE   a properties file with locksmith.uri and other settings",
          "  --workers N     worker processes, 2 to 8 (default 3)",
          "  --rounds N      turns per worker, 1 to 100 (default 3)",
          "  --lease D       lease of each turn, renewed while the worker runs, 100ms to 1m"
              + " (default 1s)",
          "  --pause D       how long worker-2 is frozen while holding the lock, longer than the"
              + " lease and at",
          "                  most 10m (default 2 x lease + 500ms)",
          "",
          "Exit status: 0 when the fence refused the stale write and no update was lost, 1"
              + " otherwise,",
          "2 bad command line, 69 backend unreachable, 78 bad backend configuration.");

  /** A timeline line: the time right-aligned under its heading, then the worker and the event. */
  private static final String TIMELINE = "%9s  %-9s  %s";

  private final PrintStream out;
  private long start;

  DemoCommand(PrintStream out) {
    this.out = out;
  }

  /** One holding as the demo saw it, timed when its events arrived here. */
  private static final class Hold {
    final String worker;
    final long token;
    final long from;
    long to = Long.MAX_VALUE;

    Hold(String worker, long token, long from) {
      this.worker = worker;
      this.token = token;
      this.from = from;
    }
  }

  /** One worker process and what it told us. */
  private final class Worker {
    final String name;
    final Process process;
    final Path stderr;
    final PrintWriter stdin;
    final CompletableFuture<Void> ready = new CompletableFuture<>();
    final CompletableFuture<Void> firstAcquired = new CompletableFuture<>();
    final CompletableFuture<Void> holding = new CompletableFuture<>();
    volatile boolean failed;
    volatile Hold current;

    Worker(String name, Process process, Path stderr) {
      this.name = name;
      this.process = process;
      this.stderr = stderr;
      this.stdin = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
    }

    void send(String line) {
      stdin.println(line);
    }

    /** Reads the worker's events until it exits, and tells them on the timeline. */
    void listen(List<Hold> holds) {
      try (BufferedReader r =
          new BufferedReader(
              new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          on(line, holds);
        }
      } catch (IOException e) {
        failed = true;
        log(name, "its output could not be read: " + e.getMessage());
      } finally {
        ready.completeExceptionally(new IllegalStateException(name + " exited"));
        firstAcquired.completeExceptionally(new IllegalStateException(name + " exited"));
        holding.completeExceptionally(new IllegalStateException(name + " exited"));
      }
    }

    private void on(String raw, List<Hold> holds) {
      if (!raw.startsWith(DemoWorker.PREFIX)) {
        log(name, "printed: " + raw);
        return;
      }
      String line = raw.substring(DemoWorker.PREFIX.length());
      String[] w = line.split(" ", 5);
      long now = System.nanoTime();
      switch (w[0]) {
        case "READY":
          ready.complete(null);
          break;
        case "ACQUIRED":
          current = new Hold(name, Long.parseLong(w[1]), now);
          holds.add(current);
          log(name, "acquired the lock, fencing token " + w[1]);
          firstAcquired.complete(null);
          break;
        case "HOLDING":
          holding.complete(null);
          break;
        case "WOKE":
          log(
              name,
              "runs again and finishes its work; its lease is "
                  + (w[1].equals("valid")
                      ? "still valid"
                      : "no longer valid, but like most code it does not check")
                  + "; it writes");
          break;
        case "WROTE":
          if (w[3].equals("OK")) {
            log(name, "wrote counter = " + w[1] + " with token " + w[2] + ": accepted");
          } else {
            log(
                name,
                "wrote counter = "
                    + w[1]
                    + " with token "
                    + w[2]
                    + ": REFUSED, the store has seen token "
                    + w[4]
                    + " (without fencing this write would have set the counter back: a lost"
                    + " update)");
          }
          break;
        case "RELEASED":
          Hold h = current;
          if (h != null) {
            h.to = now;
          }
          log(
              name,
              Boolean.parseBoolean(w[1])
                  ? "released the lock"
                  : "released: the lease had already expired, nothing of the new holder's was"
                      + " freed");
          break;
        case "LOST":
          log(name, "lease lost (" + w[1] + "): the library's loss signal fired");
          break;
        case "FAILED":
          failed = true;
          log(name, "failed: " + line.substring(line.indexOf(' ') + 1));
          break;
        case "DONE":
          break;
        default:
          failed = true;
          log(name, "said something unexpected: " + line);
      }
    }
  }

  int run(List<String> argv) throws InterruptedException {
    Args args =
        Args.parse(
            argv,
            Set.of("backend", "config", "workers", "rounds", "lease", "pause"),
            Set.of("help"));
    if (args.flag("help")) {
      out.println(USAGE);
      return 0;
    }
    if (!args.positional().isEmpty()) {
      throw new Args.UsageException("unexpected argument '" + args.positional().get(0) + "'");
    }
    int workers = args.integer("workers", 3, 2, 8);
    int rounds = args.integer("rounds", 3, 1, 100);
    Duration lease =
        args.duration(
            "lease", Duration.ofSeconds(1), Duration.ofMillis(100), Duration.ofMinutes(1));
    Duration pause =
        args.duration(
            "pause",
            lease.multipliedBy(2).plusMillis(500),
            Duration.ofMillis(1),
            Duration.ofMinutes(10));
    if (pause.compareTo(lease) <= 0) {
      throw new Args.UsageException(
          "--pause was '"
              + args.get("pause")
              + "' but it must be longer than --lease ("
              + Durations.format(lease)
              + "), or the frozen worker keeps its lock and there is nothing to see");
    }
    Path h2Dir = null;
    // The workers get the backend as the demo got it, a URI through their environment rather
    // than their command line, where anyone on the machine could read its password with ps.
    List<String> backendArgs = new ArrayList<>();
    Map<String, String> backendEnv = new HashMap<>();
    Backends.Backend backend;
    if (args.get("backend") == null
        && args.get("config") == null
        && System.getenv("LOCKSMITH_URI") == null
        && System.getProperty("locksmith.uri") == null) {
      try {
        h2Dir = Files.createTempDirectory("lockctl-demo-");
      } catch (IOException e) {
        throw new LockException(
            "cannot create a temporary directory for the demo's H2 database: " + e.getMessage(), e);
      }
      String uri = "jdbc:h2:file:" + h2Dir.resolve("locks").toAbsolutePath() + ";AUTO_SERVER=TRUE";
      backendEnv.put("LOCKSMITH_URI", uri);
      backend = Backends.fromUri("the demo's embedded database", uri);
    } else {
      backend = Backends.resolve(args, null);
      if (args.get("backend") != null) {
        backendEnv.put("LOCKSMITH_URI", args.get("backend"));
      } else if (args.get("config") != null) {
        backendArgs.addAll(List.of("--config", args.get("config")));
      } else if (System.getProperty("locksmith.uri") != null) {
        backendEnv.put("LOCKSMITH_URI", System.getProperty("locksmith.uri"));
      } // else the workers inherit LOCKSMITH_URI and LOCKSMITH_* with the rest of the environment
    }
    try {
      return run(
          backend,
          new WorkerBackend(backendArgs, backendEnv),
          h2Dir != null,
          workers,
          rounds,
          lease,
          pause);
    } finally {
      if (h2Dir != null) {
        deleteQuietly(h2Dir);
      }
    }
  }

  private int run(
      Backends.Backend backend,
      WorkerBackend workerBackend,
      boolean embedded,
      int workers,
      int rounds,
      Duration lease,
      Duration pause)
      throws InterruptedException {
    FencedStore store = new FencedStore();
    List<Hold> holds = new CopyOnWriteArrayList<>();
    List<Worker> started = new ArrayList<>();
    // This client opens the backend first: for the embedded H2 database it is the server the
    // workers reach, and it lives until they are done.
    try (LockClient client = backend.connect();
        StoreServer server = new StoreServer(store)) {
      if (!client.guarantees().has(Guarantees.Feature.SHARED_ACROSS_PROCESSES)) {
        throw new Args.UsageException(
            "--backend "
                + backend.display()
                + " keeps its locks inside one process, and the demo's workers are separate"
                + " processes: give a server backend, or leave --backend out for the embedded H2"
                + " database");
      }
      out.printf(
          Locale.ROOT,
          "Locksmith demo on %s%s: %d worker processes, %d turns each, lock '%s', lease %s,"
              + " renewed.%n",
          backend.display(),
          embedded ? " (embedded, served to the workers by this process)" : "",
          workers,
          rounds,
          LOCK_NAME,
          Durations.format(lease));
      out.printf(
          Locale.ROOT,
          "worker-2 will be frozen (SIGSTOP) for %s while holding the lock, like a long GC pause;"
              + " its renewal freezes with it.%n%n",
          Durations.format(pause));
      out.println(String.format(Locale.ROOT, TIMELINE, "time", "worker", "event").stripTrailing());
      start = System.nanoTime();
      for (int w = 1; w <= workers; w++) {
        started.add(
            startWorker("worker-" + w, workerBackend, server.port(), rounds, lease, w == 2, holds));
      }
      for (Worker w : started) {
        await(w.ready, w, "to connect to the backend", Duration.ofSeconds(60));
      }
      log("demo", "all " + workers + " workers connected; worker-2 goes first");
      Worker victim = started.get(1);
      victim.send("start");
      await(victim.firstAcquired, victim, "to acquire the lock", Duration.ofSeconds(30));
      for (Worker w : started) {
        if (w != victim) {
          w.send("start");
        }
      }
      await(victim.holding, victim, "to read the store", Duration.ofSeconds(30));
      signal(victim, "STOP");
      Hold frozen = victim.current;
      log(
          victim.name,
          "is frozen (SIGSTOP) for "
              + Durations.format(pause)
              + ", holding token "
              + frozen.token
              + " (its lease is "
              + Durations.format(lease)
              + ")");
      Thread.sleep(pause.toMillis());
      signal(victim, "CONT");
      log(victim.name, "is let go (SIGCONT)");
      victim.send("go");
      boolean failed = false;
      for (Worker w : started) {
        if (!w.process.waitFor(60 + rounds, TimeUnit.SECONDS)) {
          log(w.name, "did not finish within " + (60 + rounds) + " s; stopping it");
          w.process.destroyForcibly();
          failed = true;
        }
      }
      for (Worker w : started) {
        w.process.waitFor(5, TimeUnit.SECONDS); // its output is read to the end
        if (w.failed || w.process.exitValue() != 0) {
          failed = true;
          showStderr(w);
        }
      }
      return summarize(store, holds, frozen, failed, workers * rounds);
    } catch (WorkerFailed e) {
      log(e.worker.name, e.getMessage());
      showStderr(e.worker);
      return Main.FAILED;
    } finally {
      for (Worker w : started) {
        if (w.process.isAlive()) {
          signal(w, "CONT");
          w.process.destroyForcibly();
        }
      }
    }
  }

  private Worker startWorker(
      String name,
      WorkerBackend backend,
      int port,
      int rounds,
      Duration lease,
      boolean freeze,
      List<Hold> holds) {
    List<String> cmd = new ArrayList<>();
    cmd.add(
        ProcessHandle.current()
            .info()
            .command()
            .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    cmd.addAll(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xss512k"));
    cmd.addAll(
        List.of("-cp", System.getProperty("java.class.path"), Main.class.getName(), "demo-worker"));
    cmd.addAll(backend.args);
    cmd.addAll(
        List.of(
            "--store",
            Integer.toString(port),
            "--rounds",
            Integer.toString(rounds),
            "--lease",
            Durations.format(lease)));
    if (freeze) {
      cmd.add("--freeze");
    }
    try {
      Path err = Files.createTempFile("lockctl-" + name + "-", ".err");
      err.toFile().deleteOnExit();
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(err.toFile());
      if (!backend.env.isEmpty()) {
        // only the backend the demo uses, not settings of the environment that --backend overrode
        pb.environment().keySet().removeIf(k -> k.startsWith("LOCKSMITH_"));
        pb.environment().putAll(backend.env);
      }
      Process p = pb.start();
      Worker w = new Worker(name, p, err);
      Thread reader = new Thread(() -> w.listen(holds), "lockctl-demo-" + name);
      reader.setDaemon(true);
      reader.start();
      return w;
    } catch (IOException e) {
      throw new LockException(
          "could not start the demo's worker process "
              + name
              + " ("
              + cmd.get(0)
              + "): "
              + e.getMessage(),
          e);
    }
  }

  /**
   * How the workers reach the demo's backend: options of their command line and variables of their
   * environment.
   */
  private static final class WorkerBackend {
    final List<String> args;
    final Map<String, String> env;

    WorkerBackend(List<String> args, Map<String, String> env) {
      this.args = args;
      this.env = env;
    }
  }

  /** A worker died or hung before the demo could go on. */
  private static final class WorkerFailed extends Exception {
    private static final long serialVersionUID = 1L;
    final transient Worker worker;

    WorkerFailed(Worker worker, String message) {
      super(message);
      this.worker = worker;
    }
  }

  private void await(CompletableFuture<Void> step, Worker w, String what, Duration timeout)
      throws InterruptedException, WorkerFailed {
    try {
      step.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      throw new WorkerFailed(
          w,
          "exited before it got "
              + what.replaceFirst("^to ", "")
              + " (exit status "
              + exitOf(w.process)
              + ")");
    } catch (java.util.concurrent.TimeoutException e) {
      throw new WorkerFailed(w, "did not manage " + what + " within " + Durations.format(timeout));
    }
  }

  private static String exitOf(Process p) {
    try {
      return p.waitFor(5, TimeUnit.SECONDS) ? Integer.toString(p.exitValue()) : "still running";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "unknown";
    }
  }

  private void showStderr(Worker w) {
    try {
      String text = Files.readString(w.stderr, StandardCharsets.UTF_8).strip();
      if (!text.isEmpty()) {
        synchronized (out) {
          out.println("--- what " + w.name + " printed on standard error:");
          out.println(text);
          out.println("---");
        }
      }
    } catch (IOException e) {
      log(w.name, "its standard error could not be read: " + e.getMessage());
    }
  }

  /** Sends SIGSTOP or SIGCONT: Java has no API for them, so through kill(1). */
  private static void signal(Worker w, String signal) throws InterruptedException {
    long pid = w.process.pid();
    try {
      Process kill =
          new ProcessBuilder("kill", "-" + signal, Long.toString(pid))
              .redirectErrorStream(true)
              .start();
      String said =
          new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new LockException(
            "kill -" + signal + " " + pid + " (" + w.name + ") failed: " + said);
      }
    } catch (IOException e) {
      throw new LockException(
          "the demo freezes a worker with kill -"
              + signal
              + ", which could not be run here: "
              + e.getMessage(),
          e);
    }
  }

  private int summarize(
      FencedStore store, List<Hold> holds, Hold frozen, boolean failed, int turns) {
    List<Hold> sorted = new ArrayList<>(holds);
    sorted.sort((a, b) -> Long.compare(a.from, b.from));
    boolean increasing = true;
    int withFrozen = 0;
    int others = 0;
    long longestOther = 0;
    for (int i = 1; i < sorted.size(); i++) {
      increasing &= sorted.get(i).token > sorted.get(i - 1).token;
      for (int j = 0; j < i; j++) {
        long overlap = sorted.get(j).to - sorted.get(i).from;
        if (overlap > 0) {
          if (sorted.get(j) == frozen || sorted.get(i) == frozen) {
            withFrozen++;
          } else {
            others++;
            longestOther = Math.max(longestOther, overlap);
          }
        }
      }
    }
    out.println();
    out.printf(
        Locale.ROOT,
        "turns: %d of %d; fencing tokens increased with every new holder: %s%n",
        holds.size(),
        turns,
        increasing ? "yes" : "NO");
    if (others == 0) {
      out.printf(
          Locale.ROOT,
          "overlaps: %d%s%n",
          withFrozen,
          withFrozen == 0
              ? ""
              : ", all with the frozen "
                  + frozen.worker
                  + ", whose lease had expired; the fence refused its late write");
    } else {
      out.printf(
          Locale.ROOT,
          "overlaps: %d with the frozen %s, whose lease had expired (the fence refused its late"
              + " write); %d between other turns, by at most %d ms as their events reached the demo"
              + " (a worker reports a release after making it)%n",
          withFrozen,
          frozen.worker,
          others,
          TimeUnit.NANOSECONDS.toMillis(longestOther));
    }
    out.printf(
        Locale.ROOT,
        "writes accepted: %d; stale writes refused by the fence: %d; counter = %d (no update lost:"
            + " %s)%n",
        store.accepted(),
        store.rejected(),
        store.value(),
        store.value() == store.accepted() ? "yes" : "NO");
    boolean ok =
        !failed
            && holds.size() == turns
            && increasing
            && store.rejected() >= 1
            && store.value() == store.accepted();
    out.println(
        ok
            ? "The lease expired under the frozen worker and the lock moved on; its fencing token"
                + " let the store refuse its late write."
            : "The demo did not go as expected: see the timeline above.");
    return ok ? Main.OK : Main.FAILED;
  }

  private void log(String worker, String event) {
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    synchronized (out) {
      out.printf(Locale.ROOT, TIMELINE + "%n", ms + " ms", worker, event);
    }
  }

  private static void deleteQuietly(Path dir) {
    try (var paths = Files.walk(dir)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | UncheckedIOException e) {
      // a temporary directory; the OS cleans it up
    }
  }

  /**
   * Serves the fenced store to the workers on a loopback port: {@code READ}, {@code WRITE token
   * value}.
   */
  private static final class StoreServer implements AutoCloseable {
    private final ServerSocket socket;
    private final FencedStore store;

    StoreServer(FencedStore store) {
      this.store = store;
      try {
        this.socket = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
      } catch (IOException e) {
        throw new LockException(
            "the demo could not open a loopback port for its store: " + e.getMessage(), e);
      }
      Thread t = new Thread(this::accept, "lockctl-demo-store");
      t.setDaemon(true);
      t.start();
    }

    int port() {
      return socket.getLocalPort();
    }

    private void accept() {
      while (!socket.isClosed()) {
        try {
          Socket c = socket.accept();
          Thread t = new Thread(() -> serve(c), "lockctl-demo-store-client");
          t.setDaemon(true);
          t.start();
        } catch (IOException e) {
          return; // closed
        }
      }
    }

    private void serve(Socket c) {
      try (c;
          BufferedReader in =
              new BufferedReader(
                  new InputStreamReader(c.getInputStream(), StandardCharsets.UTF_8));
          PrintWriter out = new PrintWriter(c.getOutputStream(), true, StandardCharsets.UTF_8)) {
        String line;
        while ((line = in.readLine()) != null) {
          String[] w = line.split(" ");
          if (w[0].equals("READ") && w.length == 1) {
            out.println(store.read());
          } else if (w[0].equals("WRITE") && w.length == 3) {
            Long refusedBy = store.write(Long.parseLong(w[1]), Long.parseLong(w[2]));
            out.println(refusedBy == null ? "OK" : "REFUSED " + refusedBy);
          } else {
            out.println("ERROR unknown request '" + line + "'");
          }
        }
      } catch (IOException | NumberFormatException e) {
        // the worker went away or spoke nonsense; it reports its own failure
      }
    }

    @Override
    public void close() {
      try {
        socket.close();
      } catch (IOException e) {
        // closing
      }
    }
  }
}
