package dev.locksmith.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What lockctl takes for a secret, and that it never prints one, however the password is written.
 */
class SecretsTest {

  @Test
  void aPasswordIsReadUpToTheLastAtSignWhateverItHolds() {
    assertThat(Secrets.password("redis://:Se/cret@127.0.0.1:6379")).isEqualTo("Se/cret");
    assertThat(Secrets.password("jdbc:mysql://root:a?b#c@d@db:3306/test")).isEqualTo("a?b#c@d");
    assertThat(Secrets.password("redis://user@host:6379")).isNull();
    assertThat(Secrets.password("local:")).isNull();
  }

  @Test
  void displayHidesThePasswordAndValuesUnderSecretKeys() {
    assertThat(Secrets.display("redis://:Se/cret@127.0.0.1:6379"))
        .isEqualTo("redis://:****@127.0.0.1:6379");
    assertThat(Secrets.display("redis://h:6379?pasword=x1&pass=x2&auth=x3&lease=10s"))
        .isEqualTo("redis://h:6379?pasword=****&pass=****&auth=****&lease=10s");
    assertThat(Secrets.display("jdbc:mysql://address=(host=h)(port=1)(user=u)(password=x4)/db"))
        .isEqualTo("jdbc:mysql://address=(host=h)(port=1)(user=u)(password=****)/db");
    assertThat(Secrets.display("jdbc:mysql://(host=h,password=x5,user=u)/db"))
        .isEqualTo("jdbc:mysql://(host=h,password=****,user=u)/db");
    assertThat(Secrets.display("redis://localhost:6379")).isEqualTo("redis://localhost:6379");
  }

  @Test
  void everySecretOfTheCommandLineConfigFileAndEnvironmentIsScrubbedFromOutput(@TempDir Path dir)
      throws Exception {
    Path config =
        Files.writeString(
            dir.resolve("c.properties"),
            "locksmith.uri=redis://h:6379\nlocksmith.password=fromFile9\n");
    Properties system = new Properties();
    system.setProperty("locksmith.token", "fromSysProp9");
    Secrets secrets =
        Secrets.of(
            List.of(
                "exec",
                "--backend",
                "redis://:Se%2Fcret9@h:6379?auth=fromQuery9",
                "--config",
                config.toString()),
            Map.of(
                "LOCKSMITH_URI",
                "redis://u:fromEnvUri9@h",
                "LOCKSMITH_PASSWORD",
                "fromEnv9",
                "PATH",
                "/usr/bin"),
            system);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    PrintStream out = secrets.scrubbing(new PrintStream(bytes, true, StandardCharsets.UTF_8));
    out.println(
        "raw Se%2Fcret9, decoded Se/cret9, fromQuery9, fromFile9, fromSysProp9, fromEnvUri9,"
            + " fromEnv9");
    out.printf("split %s%s%n", "fromEn", "v9");
    out.print("unfinished fromEnv9");
    assertThat(bytes.toString(StandardCharsets.UTF_8))
        .isEqualTo("raw ****, decoded ****, ****, ****, ****, ****, ****\nsplit ****\n");
    out.close();
    assertThat(bytes.toString(StandardCharsets.UTF_8)).endsWith("\nunfinished ****");
  }

  @Test
  void aShortSecretIsScrubbedAsAWholeWordOnly() {
    Secrets secrets = Secrets.of(List.of("redis://:ab@h:6379"), Map.of(), new Properties());
    assertThat(secrets.scrub("redis://:ab@h:6379 is unreachable (tab)"))
        .isEqualTo("redis://:****@h:6379 is unreachable (tab)");
  }
}
