package dev.locksmith.etcd;

import dev.locksmith.spi.BackendConfig;
import dev.locksmith.spi.Durations;
import dev.locksmith.spi.LockUri;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

/** The options of an {@code etcd://} URI, read and checked all at once before anything connects. */
final class EtcdSettings {
  static final String TTL = "ttl";
  static final String CONNECT_TIMEOUT = "connect-timeout";
  static final String REQUEST_TIMEOUT = "request-timeout";
  static final String TLS = "tls";
  static final String TLS_CA = "tls-ca";
  static final String TLS_CERT = "tls-cert";
  static final String TLS_KEY = "tls-key";
  static final Set<String> OPTIONS =
      Set.of(TTL, CONNECT_TIMEOUT, REQUEST_TIMEOUT, TLS, TLS_CA, TLS_CERT, TLS_KEY);

  static final int DEFAULT_PORT = 2379;
  static final String DEFAULT_PREFIX = "/locksmith";

  final List<String> endpoints;

  /** host:port list for messages; never holds a secret. */
  final String shownEndpoints;

  final String user;
  final String password;
  final String prefix;
  final Duration ttl;
  final Duration connectTimeout;
  final Duration requestTimeout;
  final boolean tls;
  final Path tlsCa;
  final Path tlsCert;
  final Path tlsKey;

  private EtcdSettings(BackendConfig config) {
    LockUri uri = config.uri();
    String shownUri = uri.toString();
    if (uri.hosts().isEmpty()) {
      config.problem(
          "`uri` was '"
              + shownUri
              + "' but it must name at least one etcd endpoint, such as etcd://localhost:2379 or"
              + " etcd://h1:2379,h2:2379,h3:2379");
    }
    String path = uri.path();
    String p = path.isEmpty() || path.equals("/") ? DEFAULT_PREFIX : path;
    while (p.length() > 1 && p.endsWith("/")) {
      p = p.substring(0, p.length() - 1);
    }
    if (p.length() > 200 || p.chars().anyMatch(c -> c < ' ' || c == 0x7f)) {
      config.problem(
          "`uri` was '"
              + shownUri
              + "' but its path (the key prefix) '"
              + p
              + "' must be at most 200 printable characters, such as /locksmith");
    }
    this.prefix = p;
    this.user = uri.user();
    this.password = uri.password();
    if (user != null && password == null) {
      config.problem(
          "`uri` was '"
              + shownUri
              + "' but user '"
              + user
              + "' has no password: write etcd://user:password@host:port");
    }
    if (user == null && password != null) {
      config.problem(
          "`uri` was '"
              + shownUri
              + "' but it gives a password without a user: write etcd://user:password@host:port");
    }
    this.ttl =
        config.duration(TTL, Duration.ofSeconds(10), Duration.ofSeconds(1), Duration.ofHours(1));
    if (ttl.toNanos() % 1_000_000_000L != 0) {
      config.problem(
          TTL,
          config.string(TTL, ""),
          "it must be whole seconds (etcd counts lease TTLs in seconds), such as 10s");
    }
    this.connectTimeout =
        config.duration(
            CONNECT_TIMEOUT, Duration.ofSeconds(5), Duration.ofMillis(100), Duration.ofMinutes(5));
    this.requestTimeout =
        config.duration(
            REQUEST_TIMEOUT, Duration.ofSeconds(5), Duration.ofMillis(100), Duration.ofMinutes(5));
    this.tlsCa = file(config, TLS_CA);
    this.tlsCert = file(config, TLS_CERT);
    this.tlsKey = file(config, TLS_KEY);
    boolean anyTlsFile =
        config.options().containsKey(TLS_CA)
            || config.options().containsKey(TLS_CERT)
            || config.options().containsKey(TLS_KEY);
    boolean tlsFlag = config.bool(TLS, anyTlsFile);
    if (config.options().containsKey(TLS) && !tlsFlag && anyTlsFile) {
      config.problem(
          TLS,
          config.string(TLS, ""),
          "it must be true (or left out) when tls-ca, tls-cert or tls-key is given");
    }
    this.tls = tlsFlag;
    if (config.options().containsKey(TLS_CERT) != config.options().containsKey(TLS_KEY)) {
      config.problem(
          "`"
              + (config.options().containsKey(TLS_CERT) ? TLS_KEY : TLS_CERT)
              + "` is missing but it must be given together with `"
              + (config.options().containsKey(TLS_CERT) ? TLS_CERT : TLS_KEY)
              + "`: a client certificate needs its PKCS#8 private key");
    }
    for (LockUri.HostPort hp : uri.hosts()) {
      if (hp.host().indexOf(':') >= 0) {
        // jetcd hands gRPC the target ip:///[addr]:port, which gRPC cannot parse: it threw its own
        // IllegalArgumentException at the first call
        config.problem(
            "`uri` was '"
                + shownUri
                + "' but its host ["
                + hp.host()
                + "] is an IPv6 address, which the etcd client (jetcd) cannot dial; use a host name"
                + " that resolves to it, such as localhost for ::1");
      }
    }
    List<String> eps = new ArrayList<>();
    for (LockUri.HostPort hp : uri.hosts()) {
      String host = hp.host().indexOf(':') >= 0 ? "[" + hp.host() + "]" : hp.host();
      eps.add((tls ? "https://" : "http://") + host + ":" + hp.portOr(DEFAULT_PORT));
    }
    this.endpoints = List.copyOf(eps);
    this.shownEndpoints =
        uri.hosts().stream()
            .map(
                hp -> {
                  String host = hp.host().indexOf(':') >= 0 ? "[" + hp.host() + "]" : hp.host();
                  return host + ":" + hp.portOr(DEFAULT_PORT);
                })
            .collect(Collectors.joining(","));
  }

  /**
   * Reads every option, recording each problem in {@code config}; the caller runs {@link
   * BackendConfig#check()}.
   */
  static EtcdSettings read(BackendConfig config) {
    return new EtcdSettings(config);
  }

  private static Path file(BackendConfig config, String key) {
    String text = config.options().get(key);
    if (text == null) {
      return null;
    }
    try {
      Path path = Path.of(text);
      if (Files.isRegularFile(path) && Files.isReadable(path)) {
        return path;
      }
    } catch (InvalidPathException e) {
      // reported below
    }
    config.problem(key, text, "it must be the path of a readable PEM file");
    return null;
  }

  /**
   * @return the TTL in whole seconds, as etcd takes it
   */
  long ttlSeconds() {
    return ttl.getSeconds();
  }

  /**
   * @return how the endpoints are named in messages: {@code etcd at h1:2379,h2:2379 (as user 'u')}
   */
  String describe() {
    return "etcd at " + shownEndpoints + (user == null ? "" : " (as user '" + user + "')");
  }

  @Override
  public String toString() {
    return "EtcdSettings{"
        + describe()
        + ", prefix "
        + prefix
        + ", ttl "
        + Durations.format(ttl)
        + ", tls "
        + tls
        + "}";
  }
}
