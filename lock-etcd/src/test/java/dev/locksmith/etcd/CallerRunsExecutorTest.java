package dev.locksmith.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class CallerRunsExecutorTest {

  @Test
  void aTaskStartedWhileSendingRunsOnTheCallerAndAnyOtherOnThePool() throws Exception {
    CallerRunsExecutor executor = new CallerRunsExecutor("test");
    try {
      Thread caller = Thread.currentThread();
      AtomicReference<Thread> ranOn = new AtomicReference<>();
      CompletableFuture<String> answer =
          CallerRunsExecutor.send(
              () -> {
                executor.execute(() -> ranOn.set(Thread.currentThread()));
                // nested: still the caller's, and the outer send's mark survives the inner one
                CallerRunsExecutor.send(() -> CompletableFuture.completedFuture("inner"));
                executor.execute(() -> assertThat(Thread.currentThread()).isSameAs(caller));
                return CompletableFuture.completedFuture("sent");
              });
      assertThat(answer.get()).isEqualTo("sent");
      assertThat(ranOn.get()).as("a task started inside send").isSameAs(caller);

      CompletableFuture<Thread> outside = new CompletableFuture<>();
      executor.execute(() -> outside.complete(Thread.currentThread()));
      assertThat(outside.get(10, TimeUnit.SECONDS))
          .as("a task started outside send")
          .isNotSameAs(caller)
          .matches(t -> t.getName().startsWith("locksmith-etcd-calls-test"));
    } finally {
      executor.shutdownNow();
    }
    assertThat(executor.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    // once shut down, not even a send runs a task: jetcd's call fails as with its own pool closed
    assertThatThrownBy(
            () ->
                CallerRunsExecutor.send(
                    () -> {
                      executor.execute(() -> {});
                      return CompletableFuture.completedFuture(null);
                    }))
        .isInstanceOf(RejectedExecutionException.class);
  }
}
