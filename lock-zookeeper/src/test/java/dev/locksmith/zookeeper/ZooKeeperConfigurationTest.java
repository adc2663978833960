package dev.locksmith.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.locksmith.BackendUnavailableException;
import dev.locksmith.LockConfigurationException;
import dev.locksmith.Locks;
import dev.locksmith.tck.ServerProcess;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

/**
 * Bad input is refused before connecting, every problem at once; unreachable servers fail within
 * the connect timeout.
 */
class ZooKeeperConfigurationTest {

  @Test
  void everyBadOptionIsReportedAtOnceBeforeConnecting() {
    assertThatThrownBy(
            () ->
                Locks.connect(
                    "zookeeper://127.0.0.1:1/a//b?session-timeout=forever&connection-timeout=-1s"
                        + "&namespace=/x/&acl=secret"))
        .isInstanceOf(LockConfigurationException.class)
        .satisfies(e -> assertThat(((LockConfigurationException) e).problems()).hasSize(5))
        .hasMessageContaining("`session-timeout` was 'forever'")
        .hasMessageContaining("`connection-timeout` was '-1s'")
        .hasMessageContaining("`namespace` was '/x/'")
        .hasMessageContaining("`acl` was 'secret' but it must be open, creator or creator-read")
        .hasMessageContaining("chroot '/a//b'");
  }

  @Test
  void aUriWithoutServersIsRefused() {
    assertThatThrownBy(() -> Locks.connect("zookeeper:/just/a/path"))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("`uri`")
        .hasMessageContaining("at least one ZooKeeper server");
  }

  @Test
  void unknownOptionsAreRefused() {
    assertThatThrownBy(() -> Locks.connect("zookeeper://127.0.0.1:1?sesion-timeout=2s"))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("sesion-timeout");
  }

  @Test
  void credentialsAreCheckedAndThePasswordNeverShown() {
    assertThatThrownBy(() -> Locks.connect("zookeeper://alice@127.0.0.1:1"))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("has no password");
    assertThatThrownBy(() -> Locks.connect("zookeeper://127.0.0.1:1?acl=creator"))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("`acl` was 'creator'")
        .hasMessageContaining("needs credentials");
    assertThatThrownBy(() -> Locks.connect("zookeeper://alice:s3cret@127.0.0.1:1/x//y"))
        .isInstanceOf(LockConfigurationException.class)
        .hasMessageContaining("alice:****@")
        .hasMessageNotContaining("s3cret");
  }

  @Test
  void anUnreachableServerFailsWithinTheConnectTimeoutNamingIt() {
    int port = ServerProcess.freePort();
    long start = System.nanoTime();
    assertThatThrownBy(
            () -> Locks.connect("zookeeper://127.0.0.1:" + port + "?connection-timeout=500ms"))
        .isInstanceOf(BackendUnavailableException.class)
        .hasMessageContaining("127.0.0.1:" + port)
        .hasMessageContaining("`connection-timeout` of 500ms")
        .hasMessageContaining("refused");
    // the connect timeout plus the diagnosis, well short of ZooKeeper's own retrying forever
    assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(5_000);
  }

  @Test
  void somethingThatIsNotZooKeeperOnThePortIsNamed() throws Exception {
    try (ServerSocket notZooKeeper = new ServerSocket()) {
      notZooKeeper.bind(
          new InetSocketAddress("127.0.0.1", 0), 50); // accepts in the kernel, never answers
      int port = notZooKeeper.getLocalPort();
      assertThatThrownBy(
              () -> Locks.connect("zookeeper://127.0.0.1:" + port + "?connection-timeout=500ms"))
          .isInstanceOf(BackendUnavailableException.class)
          .hasMessageContaining(
              "127.0.0.1:"
                  + port
                  + " accepts connections but did not answer as a ZooKeeper server");
    }
  }

  @Test
  void theProviderIsFoundByItsScheme() {
    assertThat(Locks.schemes()).contains("zookeeper");
  }
}
