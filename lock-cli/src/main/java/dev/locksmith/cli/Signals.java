package dev.locksmith.cli;

import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * POSIX signals for {@code lockctl exec}: catching SIGINT, SIGTERM and SIGHUP so that lockctl can
 * forward them to its command and release the lock before it exits, and sending a signal to a
 * process and its descendants.
 *
 * <p>Catching goes through {@code sun.misc.Signal} (module jdk.unsupported), looked up reflectively
 * so that the build has no proprietary-API warning and a JVM without it falls back to the shutdown
 * hook alone. A signal that was ignored when the JVM started (a background job of a non-interactive
 * shell ignores SIGINT) stays ignored, as the JVM leaves it.
 */
final class Signals {
  private static final Logger LOG = LoggerFactory.getLogger(Signals.class);

  static final int SIGHUP = 1;
  static final int SIGINT = 2;
  static final int SIGKILL = 9;
  static final int SIGTERM = 15;

  private Signals() {}

  static String name(int signal) {
    switch (signal) {
      case SIGHUP:
        return "SIGHUP";
      case SIGINT:
        return "SIGINT";
      case SIGKILL:
        return "SIGKILL";
      case SIGTERM:
        return "SIGTERM";
      default:
        return "signal " + signal;
    }
  }

  /**
   * Installs {@code handler} for SIGINT, SIGTERM and SIGHUP; it runs on a thread of the JVM's own
   * and receives the signal's number. The JVM then no longer exits on these signals by itself.
   *
   * @return the signals that are now caught (empty if the JVM offers no way)
   */
  static List<String> catchTermination(IntConsumer handler) {
    List<String> caught = new ArrayList<>();
    try {
      Class<?> signalClass = Class.forName("sun.misc.Signal");
      Class<?> handlerClass = Class.forName("sun.misc.SignalHandler");
      Method getNumber = signalClass.getMethod("getNumber");
      Method handle = signalClass.getMethod("handle", signalClass, handlerClass);
      Object ignored = handlerClass.getField("SIG_IGN").get(null);
      Object proxy =
          Proxy.newProxyInstance(
              Signals.class.getClassLoader(),
              new Class<?>[] {handlerClass},
              (p, m, a) -> {
                if (m.getName().equals("handle") && a != null && a.length == 1) {
                  handler.accept((Integer) getNumber.invoke(a[0]));
                  return null;
                }
                if (m.getName().equals("toString")) {
                  return "lockctl signal handler";
                }
                if (m.getName().equals("hashCode")) {
                  return System.identityHashCode(p);
                }
                if (m.getName().equals("equals")) {
                  return p == a[0];
                }
                return null;
              });
      for (String name : List.of("INT", "TERM", "HUP")) {
        try {
          Object signal = signalClass.getConstructor(String.class).newInstance(name);
          Object previous = handle.invoke(null, signal, proxy);
          if (previous == ignored) {
            // ignored when the JVM started: the JVM keeps it ignored, so do we
            handle.invoke(null, signal, previous);
          } else {
            caught.add("SIG" + name);
          }
        } catch (ReflectiveOperationException | RuntimeException e) {
          LOG.debug("cannot catch SIG{}: {}", name, e.toString());
        }
      }
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      LOG.debug(
          "signals cannot be caught on this JVM ({}); the shutdown hook releases the lock",
          e.toString());
    }
    return caught;
  }

  /**
   * Sends a signal to a process and to every descendant it has now (a shell's children too, so that
   * {@code sh -c 'a; b'} cannot leave {@code a} running). Descendants are listed before the process
   * is signalled, since they leave its tree once it dies.
   *
   * @return whether the process was alive to be signalled
   */
  static boolean sendToTree(Process process, int signal) {
    List<ProcessHandle> targets = new ArrayList<>();
    process.descendants().forEach(targets::add);
    if (!process.isAlive()) {
      return false;
    }
    if (signal == SIGKILL) {
      targets.forEach(ProcessHandle::destroyForcibly);
      process.destroyForcibly();
      return true;
    }
    if (signal == SIGTERM) {
      targets.forEach(ProcessHandle::destroy);
      process.destroy();
      return true;
    }
    List<String> kill =
        new ArrayList<>(
            List.of(
                "kill",
                "-s",
                name(signal).substring(3).toUpperCase(Locale.ROOT),
                Long.toString(process.pid())));
    targets.forEach(h -> kill.add(Long.toString(h.pid())));
    try {
      Process k =
          new ProcessBuilder(kill)
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.DISCARD)
              .start();
      if (!k.waitFor(5, TimeUnit.SECONDS)) {
        k.destroyForcibly();
      }
    } catch (IOException e) {
      LOG.debug("cannot run kill ({}); sending SIGTERM instead of {}", e.toString(), name(signal));
      targets.forEach(ProcessHandle::destroy);
      process.destroy();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return true;
  }
}
