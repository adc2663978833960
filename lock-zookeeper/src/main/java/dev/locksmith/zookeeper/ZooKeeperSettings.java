package dev.locksmith.zookeeper;

import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.LockUri;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.common.PathUtils;
import org.apache.zookeeper.data.ACL;

/**
 * The URI and options of a {@code zookeeper://} client, read and checked before anything connects.
 */
final class ZooKeeperSettings {
  static final String SESSION_TIMEOUT = "session-timeout";
  static final String CONNECTION_TIMEOUT = "connection-timeout";
  static final String NAMESPACE = "namespace";
  static final String ACL_OPTION = "acl";

  static final int DEFAULT_PORT = 2181;
  static final Duration DEFAULT_SESSION_TIMEOUT = Duration.ofSeconds(10);
  static final Duration DEFAULT_CONNECTION_TIMEOUT = Duration.ofSeconds(5);
  static final String DEFAULT_NAMESPACE = "locksmith";

  /** Who may do what with the nodes we create. */
  enum AclMode {
    /**
     * Anyone may do anything (ZooKeeper's OPEN_ACL_UNSAFE): the default, as for most ZooKeeper
     * clients.
     */
    OPEN("open"),
    /** Only the credentials that created a node may touch it. */
    CREATOR("creator"),
    /** The creating credentials may do anything, everyone else may read. */
    CREATOR_READ("creator-read");

    final String text;

    AclMode(String text) {
      this.text = text;
    }

    List<ACL> acls() {
      switch (this) {
        case CREATOR:
          return ZooDefs.Ids.CREATOR_ALL_ACL;
        case CREATOR_READ:
          List<ACL> both = new ArrayList<>(ZooDefs.Ids.CREATOR_ALL_ACL);
          both.addAll(ZooDefs.Ids.READ_ACL_UNSAFE);
          return both;
        default:
          return ZooDefs.Ids.OPEN_ACL_UNSAFE;
      }
    }
  }

  final String shownUri;

  /** The servers as ZooKeeper's connect string lists them: {@code h1:2181,h2:2181}. */
  final String hosts;

  /** Chroot and namespace, without the leading '/': Curator's namespace, created if missing. */
  final String basePath;

  final Duration sessionTimeout;
  final Duration connectionTimeout;
  final AclMode acl;
  final String user;
  final byte[] digest;

  private ZooKeeperSettings(
      String shownUri,
      String hosts,
      String basePath,
      Duration sessionTimeout,
      Duration connectionTimeout,
      AclMode acl,
      String user,
      byte[] digest) {
    this.shownUri = shownUri;
    this.hosts = hosts;
    this.basePath = basePath;
    this.sessionTimeout = sessionTimeout;
    this.connectionTimeout = connectionTimeout;
    this.acl = acl;
    this.user = user;
    this.digest = digest;
  }

  /**
   * Reads every setting, recording each problem in {@code config}; the caller checks them all at
   * once.
   */
  static ZooKeeperSettings read(BackendConfig config) {
    LockUri uri = config.uri();
    String shown = uri.toString();
    String form = "zookeeper://[user:password@]host[:port][,host[:port]...][/chroot]";
    if (uri.hosts().isEmpty()) {
      config.problem(
          "`uri` was '" + shown + "' but it must name at least one ZooKeeper server: " + form);
    }
    String hosts =
        uri.hosts().stream()
            .map(h -> new HostText(h.host(), h.portOr(DEFAULT_PORT)).toString())
            .collect(Collectors.joining(","));

    String chroot = uri.path();
    if (chroot.equals("/")) {
      chroot = "";
    }
    if (!chroot.isEmpty()) {
      String why = pathProblem(chroot);
      if (why != null) {
        config.problem(
            "`uri` was '"
                + shown
                + "' but its chroot '"
                + chroot
                + "' "
                + why
                + "; write it as /a/b: "
                + form);
        chroot = "";
      }
    }
    String namespace = config.string(NAMESPACE, DEFAULT_NAMESPACE);
    String nsWhy =
        namespace.isEmpty() || namespace.startsWith("/") || namespace.endsWith("/")
            ? "it must not be empty or begin or end with '/'"
            : pathProblem("/" + namespace);
    if (nsWhy != null) {
      config.problem(
          NAMESPACE,
          namespace,
          nsWhy
              + "; it must be one or more node names separated by '/', such as "
              + DEFAULT_NAMESPACE
              + " or apps/billing");
      namespace = DEFAULT_NAMESPACE;
    }
    String basePath = (chroot.isEmpty() ? "" : chroot.substring(1) + "/") + namespace;

    Duration session =
        config.duration(
            SESSION_TIMEOUT,
            DEFAULT_SESSION_TIMEOUT,
            Duration.ofMillis(500),
            Duration.ofMinutes(10));
    Duration connect =
        config.duration(
            CONNECTION_TIMEOUT,
            DEFAULT_CONNECTION_TIMEOUT,
            Duration.ofMillis(100),
            Duration.ofMinutes(10));

    String aclText = config.string(ACL_OPTION, AclMode.OPEN.text);
    AclMode acl = null;
    for (AclMode m : AclMode.values()) {
      if (m.text.equals(aclText.trim().toLowerCase(Locale.ROOT))) {
        acl = m;
      }
    }
    if (acl == null) {
      config.problem(ACL_OPTION, aclText, "it must be open, creator or creator-read");
      acl = AclMode.OPEN;
    }

    String user = uri.user();
    String password = uri.password();
    byte[] digest = null;
    if (user != null && (password == null || password.isEmpty())) {
      config.problem(
          "`uri` was '"
              + shown
              + "' but the user '"
              + user
              + "' has no password; ZooKeeper digest authentication needs both:"
              + " zookeeper://user:password@host:2181");
    } else if (user == null && password != null) {
      config.problem(
          "`uri` was '"
              + shown
              + "' but it gives a password without a user: zookeeper://user:password@host:2181");
    } else if (user != null) {
      if (user.indexOf(':') >= 0) {
        config.problem(
            "`uri` was '"
                + shown
                + "' but the user '"
                + user
                + "' contains ':', which digest authentication cannot carry");
      }
      digest = (user + ":" + password).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }
    if (acl != AclMode.OPEN && user == null) {
      config.problem(
          ACL_OPTION,
          aclText,
          "it needs credentials to name the creator: give zookeeper://user:password@host:2181, or"
              + " use acl=open");
    }
    return new ZooKeeperSettings(shown, hosts, basePath, session, connect, acl, user, digest);
  }

  /**
   * @return why {@code path} is not a valid absolute ZooKeeper path, or null if it is
   */
  private static String pathProblem(String path) {
    try {
      PathUtils.validatePath(path);
      return null;
    } catch (IllegalArgumentException e) {
      return "is not a valid ZooKeeper path (" + e.getMessage() + ")";
    }
  }

  /**
   * {@code host:port} with IPv6 addresses in brackets, as ZooKeeper's connect string wants them.
   */
  private static final class HostText {
    final String host;
    final int port;

    HostText(String host, int port) {
      this.host = host;
      this.port = port;
    }

    @Override
    public String toString() {
      return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
    }
  }
}
