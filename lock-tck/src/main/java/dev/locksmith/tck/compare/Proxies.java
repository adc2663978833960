package dev.locksmith.tck.compare;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One {@link TcpProxy} per server a client talks to (several for Redlock), acted on together: a
 * client cut off from one of them only is not cut off.
 */
final class Proxies implements AutoCloseable {
  private final List<TcpProxy> each = new ArrayList<>();

  Proxies(List<InetSocketAddress> servers) throws IOException {
    try {
      for (InetSocketAddress server : servers) {
        each.add(new TcpProxy(server));
      }
    } catch (IOException e) {
      close();
      throw e;
    }
  }

  List<InetSocketAddress> addresses() {
    List<InetSocketAddress> out = new ArrayList<>(each.size());
    each.forEach(p -> out.add(p.address()));
    return out;
  }

  void blackhole(boolean on) {
    each.forEach(p -> p.blackhole(on));
  }

  void silence(TcpProxy.Direction direction, boolean on) {
    each.forEach(p -> p.silence(direction, on));
  }

  void delay(Duration oneWay) {
    each.forEach(p -> p.delay(oneWay));
  }

  @Override
  public void close() {
    for (TcpProxy p : each) {
      try {
        p.close();
      } catch (IOException e) {
        // closing anyway
      }
    }
  }
}
