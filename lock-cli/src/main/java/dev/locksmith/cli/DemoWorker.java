package dev.locksmith.cli;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.LockOptions;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;

/**
 * {@code lockctl demo-worker}: one worker process of {@code lockctl demo}, started by it and not
 * meant to be run by hand. It speaks a line protocol: it reads {@code start} (and, when it is the
 * worker to be frozen, {@code go}) on standard input, and writes one event per line on standard
 * output, each after {@link #PREFIX} ({@code READY}, {@code ACQUIRED token}, {@code HOLDING token},
 * {@code WOKE valid|invalid}, {@code WROTE value token OK|REFUSED highest}, {@code RELEASED
 * true|false}, {@code LOST reason}, {@code FAILED message}, {@code DONE}). The fenced store is the
 * demo's, over loopback.
 */
final class DemoWorker {
  static final String USAGE =
      String.join(
          "\n",
          "usage: lockctl demo-worker --store PORT --rounds N --lease D [--freeze] [--backend URI |"
              + " --config FILE]",
          "",
          "One worker process of 'lockctl demo', which starts it; not meant to be run by hand.");

  /**
   * Marks the protocol's lines, so that anything else a library prints on standard output is not
   * taken for an event.
   */
  static final String PREFIX = "@demo ";

  private final PrintStream out;

  DemoWorker(PrintStream out) {
    this.out = out;
  }

  int run(List<String> argv) throws InterruptedException {
    Args args =
        Args.parse(
            argv,
            Set.of("backend", "config", "store", "rounds", "lease"),
            Set.of("freeze", "help"));
    if (args.flag("help")) {
      out.println(USAGE);
      return Main.OK;
    }
    int port = args.integer("store", 0, 1, 65535);
    int rounds = args.integer("rounds", 3, 1, 100);
    Duration lease =
        args.duration("lease", Duration.ofSeconds(1), ExecCommand.MIN_LEASE, ExecCommand.MAX_LEASE);
    boolean freeze = args.flag("freeze");
    Backends.Backend backend = Backends.resolve(args, null);
    // Renewal is on, as in any real service: only freezing the whole process stops it.
    LockOptions options = LockOptions.builder().lease(lease).reentrant(false).build();
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    try (LockClient client = backend.connect();
        Socket socket = new Socket(InetAddress.getLoopbackAddress(), port);
        BufferedReader storeIn =
            new BufferedReader(
                new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
        PrintWriter storeOut =
            new PrintWriter(socket.getOutputStream(), true, StandardCharsets.UTF_8)) {
      DistributedLock lock = client.lock(DemoCommand.LOCK_NAME, options);
      emit("READY");
      expect(in, "start");
      for (int r = 1; r <= rounds; r++) {
        Lease held = lock.acquire(Duration.ofSeconds(60));
        long token = held.fencingToken();
        emit("ACQUIRED " + token);
        held.lost().thenAccept(loss -> emit("LOST " + loss.reason()));
        long seen = Long.parseLong(call(storeIn, storeOut, "READ"));
        if (freeze && r == 1) {
          // The demo freezes this process (SIGSTOP) now, and lets it go on after the pause.
          emit("HOLDING " + token);
          expect(in, "go");
          emit("WOKE " + (held.isValid() ? "valid" : "invalid"));
        } else {
          Thread.sleep(20); // the work
        }
        // Like most code, it does not check the lease before writing: the fence must catch it.
        String answer = call(storeIn, storeOut, "WRITE " + token + " " + (seen + 1));
        emit("WROTE " + (seen + 1) + " " + token + " " + answer);
        emit("RELEASED " + held.release());
      }
      emit("DONE");
      return Main.OK;
    } catch (IOException | UncheckedIOException e) {
      emit("FAILED " + e);
      return Main.FAILED;
    }
  }

  private void emit(String event) {
    synchronized (out) {
      out.println(PREFIX + event);
      out.flush();
    }
  }

  private static void expect(BufferedReader in, String word) throws IOException {
    String line = in.readLine();
    if (!word.equals(line)) {
      throw new IOException(
          "expected '"
              + word
              + "' from lockctl demo on standard input, got "
              + (line == null ? "end of input" : "'" + line + "'"));
    }
  }

  private static String call(BufferedReader in, PrintWriter out, String request)
      throws IOException {
    out.println(request);
    String reply = in.readLine();
    if (reply == null) {
      throw new IOException("the demo's store closed the connection");
    }
    if (reply.startsWith("ERROR")) {
      throw new IOException("the demo's store answered: " + reply);
    }
    return reply;
  }
}
