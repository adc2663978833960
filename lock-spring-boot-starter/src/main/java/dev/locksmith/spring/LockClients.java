package dev.locksmith.spring;

import dev.locksmith.LockClient;
import java.util.Collections;
import java.util.Map;
import java.util.Set;

/**
 * The clients declared as {@code locksmith.clients.<name>.*}, beside the default {@link LockClient}
 * bean. {@code @Locked(client = "<name>")} uses one of them. Closed with the context.
 */
public final class LockClients implements AutoCloseable {
  private final Map<String, LockClient> clients;

  LockClients(Map<String, LockClient> clients) {
    this.clients = Collections.unmodifiableMap(clients);
  }

  /**
   * @param name a name under {@code locksmith.clients}
   * @return that client
   * @throws IllegalArgumentException if no client has that name, listing the names there are
   */
  public LockClient get(String name) {
    LockClient c = clients.get(name);
    if (c == null) {
      throw new IllegalArgumentException(
          "`name` was '"
              + name
              + "' but no Locksmith client has that name; declared: "
              + (clients.isEmpty()
                  ? "none (declare one with locksmith.clients." + name + ".uri)"
                  : clients.keySet()));
    }
    return c;
  }

  /**
   * @return the declared names
   */
  public Set<String> names() {
    return clients.keySet();
  }

  /** Closes every named client. */
  @Override
  public void close() {
    clients.values().forEach(LockClient::close);
  }
}
