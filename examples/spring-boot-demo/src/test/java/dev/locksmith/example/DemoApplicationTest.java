package dev.locksmith.example;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

/** The example runs as a newcomer runs it, and says and serves what it should. */
class DemoApplicationTest {
  private final HttpClient http = HttpClient.newHttpClient();

  @Test
  void theDemoLosesNoItemTheFenceRefusesTheZombieAndTheEndpointsAnswer() throws Exception {
    try (ConfigurableApplicationContext ctx = SpringApplication.run(DemoApplication.class, "--server.port=0")) {
      Demo demo = ctx.getBean(Demo.class);
      assertThat(demo.lines).hasSize(3);
      assertThat(demo.lines.get(0)).endsWith(": 80 of 100 left");
      assertThat(demo.lines.get(1)).endsWith("refused by the fence");
      assertThat(demo.lines.get(2)).contains("locksmith.acquire{outcome=acquired} count=20").endsWith("locksmith.leases.held=0");

      String base = "http://localhost:" + ctx.getEnvironment().getProperty("local.server.port");
      HttpResponse<String> take = http.send(HttpRequest.newBuilder(URI.create(base + "/stock/sku-1/take"))
          .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(take.statusCode()).isEqualTo(200);
      assertThat(take.body()).contains("\"sku\":\"sku-1\"").contains("\"left\":79").containsPattern("\"fencingToken\":\\d+");

      HttpResponse<String> leases = http.send(HttpRequest.newBuilder(URI.create(base + "/actuator/locksmith")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(leases.statusCode()).isEqualTo(200);
      assertThat(leases.body()).contains("\"uri\":\"local:\"").contains("\"leases\":[]");

      HttpResponse<String> health = http.send(HttpRequest.newBuilder(URI.create(base + "/actuator/health")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(health.body()).contains("\"locksmith\"");
    }
  }
}
