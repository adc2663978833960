package dev.locksmith.bench;

import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.Locks;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/**
 * The scale run for backends whose locks live by one session (etcd's lease, ZooKeeper's session):
 * the target is that renewal traffic does not grow with the number of locks held. One
 * client holds a few locks, then many, and the server's count of requests received is read over the
 * same idle window in both states: etcd's {@code grpc_server_msg_received_total} (all methods) from
 * its /metrics, ZooKeeper's {@code Received} packets from the {@code srvr} command.
 *
 * <p>Usage: {@code SessionScaleRun <locksmith-etcd|locksmith-zookeeper> <few> <many> <window-ms>}.
 */
public final class SessionScaleRun {
  private SessionScaleRun() {}

  /**
   * @param args implementation id, the few locks, the many locks, window in ms
   * @throws Exception if the run fails
   */
  public static void main(String[] args) throws Exception {
    String impl = args[0];
    int few = Integer.parseInt(args[1]);
    int many = Integer.parseInt(args[2]);
    long windowMillis = Long.parseLong(args[3]);
    String server = Impls.serverOf(impl);
    String endpoint = Endpoints.require(server);
    Properties p = new Properties();
    p.setProperty("few", Integer.toString(few));
    p.setProperty("many", Integer.toString(many));
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    String prefix = "bench-ss-" + Long.toHexString(System.nanoTime()) + "-";
    try (LockClient client = Locks.connect(server + "://" + endpoint)) {
      List<Lease> held = new ArrayList<>(many);
      for (int i = 0; i < few; i++) {
        held.add(client.lock(prefix + i).acquire(Duration.ofSeconds(10)));
      }
      Thread.sleep(windowMillis / 2);
      measure(p, "few", server, endpoint, windowMillis, os);
      long t0 = System.nanoTime();
      for (int i = few; i < many; i++) {
        held.add(client.lock(prefix + i).acquire(Duration.ofSeconds(10)));
      }
      p.setProperty(
          "acquireManyMs", Long.toString(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)));
      Thread.sleep(windowMillis / 2);
      measure(p, "many", server, endpoint, windowMillis, os);
      p.setProperty("stillValid", Long.toString(held.stream().filter(Lease::isValid).count()));
      for (Lease lease : held) {
        lease.close();
      }
    }
    PrintStream out = System.out;
    out.println("#RESULT");
    p.store(out, impl);
    out.flush();
    System.exit(0);
  }

  private static void measure(
      Properties p,
      String state,
      String server,
      String endpoint,
      long windowMillis,
      com.sun.management.OperatingSystemMXBean os)
      throws Exception {
    long before = received(server, endpoint);
    long cpu = os.getProcessCpuTime();
    long wall = System.nanoTime();
    Thread.sleep(windowMillis);
    long after = received(server, endpoint);
    double seconds = (System.nanoTime() - wall) / 1e9;
    p.setProperty(state + "RequestsPerSec", Double.toString((after - before) / seconds));
    p.setProperty(
        state + "CpuPercentOfOneCore",
        Double.toString(100.0 * (os.getProcessCpuTime() - cpu) / 1e9 / seconds));
  }

  /**
   * @return the server's count of requests received from clients so far
   */
  static long received(String server, String endpoint) throws IOException, InterruptedException {
    if (server.equals("etcd")) {
      HttpResponse<String> r =
          HttpClient.newHttpClient()
              .send(
                  HttpRequest.newBuilder(URI.create("http://" + endpoint + "/metrics"))
                      .timeout(Duration.ofSeconds(10))
                      .build(),
                  HttpResponse.BodyHandlers.ofString());
      long sum = 0;
      for (String line : r.body().split("\n")) {
        if (line.startsWith("grpc_server_msg_received_total{")) {
          sum += (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
        }
      }
      return sum;
    }
    String[] hp = endpoint.split(":");
    try (Socket s = new Socket(hp[0], Integer.parseInt(hp[1]))) {
      s.setSoTimeout(10_000);
      OutputStream out = s.getOutputStream();
      out.write("srvr".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      BufferedReader in =
          new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII));
      for (String line; (line = in.readLine()) != null; ) {
        if (line.startsWith("Received:")) {
          return Long.parseLong(line.substring("Received:".length()).trim());
        }
      }
    }
    throw new IOException("ZooKeeper at " + endpoint + " answered srvr without a Received line");
  }
}
