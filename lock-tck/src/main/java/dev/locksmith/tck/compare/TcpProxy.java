package dev.locksmith.tck.compare;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy on a loopback port in front of a lock server, to cut one client off: while
 * {@link #blackhole(boolean) blackholed} it keeps every connection open but forwards nothing in
 * either direction, as a network partition does (no reset, no error: only silence). New
 * connections are accepted and left silent too.
 */
public final class TcpProxy implements AutoCloseable {
  private final InetSocketAddress target;
  private final ServerSocket listener;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final Object gate = new Object();
  private volatile boolean blackholed;
  private volatile boolean closed;

  /**
   * @param target the server to forward to
   * @throws IOException if no loopback port can be bound
   */
  public TcpProxy(InetSocketAddress target) throws IOException {
    this.target = target;
    this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread t = new Thread(this::accept, "tcp-proxy-" + listener.getLocalPort());
    t.setDaemon(true);
    t.start();
  }

  /** @return the proxy's own address: point the cut-off client here */
  public InetSocketAddress address() {
    return new InetSocketAddress(InetAddress.getLoopbackAddress(), listener.getLocalPort());
  }

  /** @param on true to stop forwarding (partition), false to forward again (heal) */
  public void blackhole(boolean on) {
    blackholed = on;
    if (!on) {
      synchronized (gate) {
        gate.notifyAll();
      }
    }
  }

  private void accept() {
    while (!closed) {
      try {
        Socket client = listener.accept();
        Socket server = new Socket();
        server.connect(target, 5000);
        sockets.add(client);
        sockets.add(server);
        pump(client, server);
        pump(server, client);
      } catch (IOException e) {
        if (closed) {
          return;
        }
      }
    }
  }

  private void pump(Socket from, Socket to) {
    Thread t = new Thread(() -> {
      byte[] buf = new byte[16 * 1024];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        for (int n; (n = in.read(buf)) >= 0; ) {
          synchronized (gate) {
            while (blackholed && !closed) {
              gate.wait();
            }
          }
          out.write(buf, 0, n);
          out.flush();
        }
      } catch (IOException | InterruptedException e) {
        // one side closed: close the other
      } finally {
        try {
          from.close();
          to.close();
        } catch (IOException e) {
          // closing anyway
        }
      }
    }, "tcp-proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  @Override
  public void close() throws IOException {
    closed = true;
    blackhole(false);
    listener.close();
    for (Socket s : sockets) {
      s.close();
    }
  }
}
