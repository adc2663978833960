package dev.locksmith.example.kotlin

import java.net.URI
import java.net.http.HttpClient
import java.net.http.HttpRequest
import java.net.http.HttpResponse
import org.assertj.core.api.Assertions.assertThat
import org.junit.jupiter.api.Test
import org.springframework.boot.runApplication

/** The example runs as a newcomer runs it, and says and serves what it should. */
class KotlinDemoApplicationTest {
  private val http = HttpClient.newHttpClient()

  private fun send(request: HttpRequest): HttpResponse<String> =
      http.send(request, HttpResponse.BodyHandlers.ofString())

  @Test
  fun theDemoLosesNoItemTheFenceRefusesTheZombieAndTheEndpointsAnswer() {
    runApplication<KotlinDemoApplication>("--server.port=0").use { ctx ->
      val demo = ctx.getBean(Demo::class.java)
      assertThat(demo.lines).hasSize(3)
      assertThat(demo.lines[0]).endsWith(": 80 of 100 left")
      assertThat(demo.lines[1]).endsWith("refused by the fence")
      assertThat(demo.lines[2]).matches(".*under fencing token [1-9][0-9]*")

      val base = "http://localhost:" + ctx.environment.getProperty("local.server.port")
      val take =
          send(
              HttpRequest.newBuilder(URI.create("$base/stock/sku-1/take"))
                  .POST(HttpRequest.BodyPublishers.noBody())
                  .build())
      assertThat(take.statusCode()).`as`(take.body()).isEqualTo(200)
      assertThat(take.body())
          .contains("\"sku\":\"sku-1\"")
          .contains("\"left\":99")
          .containsPattern("\"fencingToken\":[1-9][0-9]*")

      val leases = send(HttpRequest.newBuilder(URI.create("$base/actuator/locksmith")).build())
      assertThat(leases.statusCode()).isEqualTo(200)
      assertThat(leases.body()).contains("\"uri\":\"local:\"").contains("\"leases\":[]")
    }
  }
}
