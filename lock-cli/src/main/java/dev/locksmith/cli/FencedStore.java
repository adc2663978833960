package dev.locksmith.cli;

import java.util.concurrent.locks.ReentrantLock;

/**
 * The demo's protected resource: a counter that accepts a write only with a fencing token at least
 * as high as any it has seen, the way a database column or a storage service would.
 */
final class FencedStore {
  private final ReentrantLock mutex = new ReentrantLock();
  private long value;
  private long highestToken;
  private int accepted;
  private int rejected;

  long read() {
    mutex.lock();
    try {
      return value;
    } finally {
      mutex.unlock();
    }
  }

  /**
   * @return null if accepted, else the highest token seen, which refused it
   */
  Long write(long token, long newValue) {
    mutex.lock();
    try {
      if (token < highestToken) {
        rejected++;
        return highestToken;
      }
      highestToken = token;
      value = newValue;
      accepted++;
      return null;
    } finally {
      mutex.unlock();
    }
  }

  long value() {
    return read();
  }

  int accepted() {
    mutex.lock();
    try {
      return accepted;
    } finally {
      mutex.unlock();
    }
  }

  int rejected() {
    mutex.lock();
    try {
      return rejected;
    } finally {
      mutex.unlock();
    }
  }
}
