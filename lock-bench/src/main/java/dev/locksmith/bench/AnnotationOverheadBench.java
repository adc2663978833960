package dev.locksmith.bench;

import dev.locksmith.DistributedLock;
import dev.locksmith.Lease;
import dev.locksmith.LockClient;
import dev.locksmith.spring.Locked;
import dev.locksmith.spring.LocksmithAutoConfiguration;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The cost of {@code @Locked} itself: one thread, on {@code local:}, a direct {@code tryAcquire(0)}
 * + release against the same through the Spring proxy, with a fixed name and with a SpEL key. The
 * difference is the advice's own cost per call (goal: at most 2 µs).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class AnnotationOverheadBench {

  /** For JMH. */
  public AnnotationOverheadBench() {}

  /** The locked service. */
  public static class Service {
    /** For Spring. */
    public Service() {}

    /**
     * @return 1, under lock "bench-fixed"
     */
    @Locked(name = "bench-fixed")
    public int fixed() {
      return 1;
    }

    /**
     * @param id the key
     * @return 1, under lock "bench-keyed:" + id
     */
    @Locked(name = "bench-keyed", key = "#p0")
    public int keyed(String id) {
      return 1;
    }
  }

  /** The application. */
  @Configuration
  public static class App {
    /** For Spring. */
    public App() {}

    /**
     * @return the service
     */
    @Bean
    public Service service() {
      return new Service();
    }
  }

  AnnotationConfigApplicationContext context;
  LockClient client;
  DistributedLock direct;
  Service service;

  /** Starts the application on local:. */
  @Setup(Level.Trial)
  public void open() {
    context = new AnnotationConfigApplicationContext();
    context.register(LocksmithAutoConfiguration.class, App.class);
    context.refresh();
    client = context.getBean(LockClient.class);
    direct = client.lock("bench-direct");
    service = context.getBean(Service.class);
  }

  /** Stops it. */
  @TearDown(Level.Trial)
  public void close() {
    context.close();
  }

  /**
   * @return the token
   * @throws InterruptedException never, with a zero wait
   */
  @Benchmark
  public long direct() throws InterruptedException {
    Optional<Lease> lease = direct.tryAcquire(Duration.ZERO);
    try (Lease held = lease.orElseThrow()) {
      return held.fencingToken();
    }
  }

  /**
   * @return 1
   */
  @Benchmark
  public int annotatedFixedName() {
    return service.fixed();
  }

  /**
   * @return 1
   */
  @Benchmark
  public int annotatedSpelKey() {
    return service.keyed("42");
  }
}
