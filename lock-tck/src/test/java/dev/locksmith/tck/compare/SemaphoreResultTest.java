package dev.locksmith.tck.compare;

import static org.assertj.core.api.Assertions.assertThat;

import dev.locksmith.Guarantees.Fault;
import dev.locksmith.Guarantees.Feature;
import dev.locksmith.Guarantees.Promise;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * How a semaphore scenario's row is read off the contenders' reports and the resource server: holds
 * beyond N, N + 1 live leases, the fence's refusals, when the victim's permit came back, a leaked
 * permit, and the "not declared" row. Events are written by hand, timed from one base.
 */
class SemaphoreResultTest extends HandWrittenEvents {
  private static final int N = 2;

  private void hold(
      int contender, long token, long fromMs, long toMs, boolean stillHeld, boolean wroteOk) {
    event(contender, "HELD", Long.toString(token), at(fromMs));
    event(contender, "WROTE", wroteOk ? "OK" : "REJECTED", Long.toString(token));
    event(contender, "RELEASED", Boolean.toString(stillHeld), at(toMs));
  }

  private static List<String> send(ResourceServer server, String... lines) throws Exception {
    List<String> answers = new ArrayList<>();
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port());
        BufferedReader in =
            new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
        PrintWriter out =
            new PrintWriter(
                new OutputStreamWriter(s.getOutputStream(), StandardCharsets.UTF_8), true)) {
      for (String line : lines) {
        out.println(line);
        answers.add(in.readLine());
      }
    }
    return answers;
  }

  private static Result row(Fault fault) {
    Result r = new Result("store", fault, "semaphore scenario", Promise.SAFE_WITH_FENCING, "F");
    r.permits = N;
    r.victim = 0;
    return r;
  }

  @Test
  void aPausedHolderWhosePermitWasGrantedAgainIsBeyondNAndFencedOff() throws Exception {
    try (ResourceServer server = new ResourceServer()) {
      // token 1 is paused inside; 2 comes and goes; 3 and 4 hold at once once 1's permit has
      // expired
      List<String> answers =
          send(
              server,
              "ENTER 1 2",
              "ENTER 2 2",
              "LEAVE 2",
              "ENTER 3 2",
              "ENTER 4 2",
              "LEAVE 3",
              "LEAVE 4",
              "LEAVE 1");
      assertThat(answers).containsExactly("OK", "OK", "OK", "OK", "OK", "OK", "OK", "REJECTED");
      event(0, "HELD", "1", at(0));
      hold(1, 2, 10, 60, true, true);
      hold(2, 3, 1500, 1560, true, true);
      hold(1, 4, 1510, 1570, true, true);
      event(0, "LOST", "EXPIRED", at(2900));
      event(0, "WROTE", "REJECTED", "1");
      event(0, "RELEASED", "false", at(3000));
      Result r = row(Fault.HOLDER_PAUSE);
      r.measureSemaphore(
          events, server, base + 5_000_000, base + 2_500_000_000L, base + 3_100_000_000L, N);

      assertThat(r.observed()).isEqualTo("F");
      assertThat(r.overlaps())
          .as("token 4 began while the paused holder and token 3 were held")
          .isEqualTo(1);
      assertThat(r.overLive).isZero();
      assertThat(r.staleRejected).isEqualTo(1);
      assertThat(r.fencedLost()).isZero();
      assertThat(r.availableAfterMs).isEqualTo(1505L);
      assertThat(r.agrees()).isTrue();
      assertThat(r.note())
          .contains("its release found its permit gone")
          .contains("refused 1 stale writes");
    }
  }

  @Test
  void nPlusOneLeasesTheBackendCalledLiveAreUnsafe() throws Exception {
    try (ResourceServer server = new ResourceServer()) {
      hold(0, 1, 0, 100, true, true);
      hold(1, 2, 10, 100, true, true);
      hold(2, 3, 20, 100, true, true);
      Result r = row(Fault.HOLDER_CRASH);
      r.measureSemaphore(
          events, server, base + 200_000_000L, base + 200_000_000L, base + 300_000_000L, N);

      assertThat(r.overLive).isEqualTo(1);
      assertThat(r.observed()).isEqualTo("U");
      assertThat(r.agrees()).as("U where SAFE_WITH_FENCING was declared").isFalse();
    }
  }

  @Test
  void aTokenGrantedTwiceIsUnsafe() throws Exception {
    try (ResourceServer server = new ResourceServer()) {
      hold(1, 7, 0, 50, true, true);
      hold(2, 7, 60, 100, true, true);
      Result r = row(Fault.HOLDER_CRASH);
      r.measureSemaphore(events, server, base, base, base + 200_000_000L, N);

      assertThat(r.tokenRegressions).isEqualTo(1);
      assertThat(r.observed()).isEqualTo("U");
    }
  }

  @Test
  void aKilledHoldersPermitThatComesBackIsSafeAndOneThatDoesNotIsALeak() throws Exception {
    try (ResourceServer server = new ResourceServer()) {
      event(0, "HELD", "1", at(0)); // killed at 5 ms, never released
      hold(1, 2, 10, 60, true, true);
      hold(2, 3, 1200, 1300, true, true);
      hold(1, 4, 1250, 1350, true, true);
      Result r = row(Fault.HOLDER_CRASH);
      r.measureSemaphore(
          events, server, base + 5_000_000, base + 5_000_000, base + 2_000_000_000L, N);

      assertThat(r.observed()).isEqualTo("S");
      assertThat(r.overlaps()).as("the killed holder's hold ends at the kill").isZero();
      assertThat(r.availableAfterMs).isEqualTo(1245L);
      r.permitsAfter(N, new long[] {2, 0, 40}, 3000);
      assertThat(r.agrees()).isTrue();
      assertThat(r.note()).contains("2 of 2 permits taken within 40 ms, a further one refused");

      r.permitsAfter(N, new long[] {1, 0, 3000}, 3000);
      assertThat(r.agrees()).isFalse();
      assertThat(r.observed()).contains("leaked 1");
      assertThat(r.note()).contains("(LEAKED)");
    }
  }

  @Test
  void aPermitBeyondNAfterTheRunIsUnsafe() throws Exception {
    try (ResourceServer server = new ResourceServer()) {
      hold(1, 2, 10, 60, true, true);
      Result r = row(Fault.HOLDER_CRASH);
      r.measureSemaphore(events, server, base, base, base + 100_000_000L, N);
      r.permitsAfter(N, new long[] {2, 1, 10}, 3000);
      assertThat(r.observed()).isEqualTo("U");
      assertThat(r.agrees()).isFalse();
    }
  }

  @Test
  void aBackendWithoutSemaphoresGetsANotDeclaredRowThatIsNoPass() {
    Result r = row(Fault.HOLDER_PAUSE);
    r.notDeclared(Feature.SEMAPHORES);
    Result ran = row(Fault.HOLDER_CRASH);
    ran.observed = "S";
    Report report = new Report(List.of(r, ran), Duration.ofSeconds(1), true);

    assertThat(r.notDeclared()).isTrue();
    assertThat(r.notRunReason()).isNotNull();
    assertThat(report.failures()).isEmpty();
    assertThat(report.markdown())
        .contains("| not declared: the backend does not declare SEMAPHORES |")
        .contains(
            "2 results: 1 agree with the declared guarantee, 0 disagree, 0 not run, 1 not"
                + " declared");
    assertThat(report.html()).contains("not declared: the backend does not declare SEMAPHORES");
  }
}
