/*
 * Locksmith's clock shift for servers that libfaketime cannot start (redis-server built with
 * jemalloc: libfaketime's start-up reads the time through jemalloc, which reads the time, and it
 * gives up on the recursion). Preloaded with LD_PRELOAD; CLOCKSHIFT_FILE names a file holding a
 * signed whole number of seconds ("+4"), added to every read of the wall clock (CLOCK_REALTIME,
 * gettimeofday, time). Monotonic clocks are left alone, as a real clock step leaves them. The file
 * is read again at most every 10 ms of monotonic time. Nothing here allocates memory: the clock is
 * read by system calls, the file with open/read/close.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long shift_ns;
static long long checked_ns;

static long long now_ns(clockid_t id) {
  struct timespec ts;
  if (syscall(SYS_clock_gettime, id, &ts) != 0) {
    return 0;
  }
  return (long long) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long shift(void) {
  long long mono = now_ns(CLOCK_MONOTONIC);
  long long last = __atomic_load_n(&checked_ns, __ATOMIC_RELAXED);
  if (last != 0 && mono - last < 10000000LL) {
    return __atomic_load_n(&shift_ns, __ATOMIC_RELAXED);
  }
  __atomic_store_n(&checked_ns, mono, __ATOMIC_RELAXED);
  const char *path = getenv("CLOCKSHIFT_FILE");
  if (path == NULL) {
    return 0;
  }
  int fd = (int) syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
  if (fd < 0) {
    return __atomic_load_n(&shift_ns, __ATOMIC_RELAXED);
  }
  char buf[32];
  long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
  syscall(SYS_close, fd);
  if (n <= 0) {
    return __atomic_load_n(&shift_ns, __ATOMIC_RELAXED);
  }
  long long v = 0;
  int i = 0;
  int negative = 0;
  if (buf[0] == '+' || buf[0] == '-') {
    negative = buf[0] == '-';
    i = 1;
  }
  for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++) {
    v = v * 10 + (buf[i] - '0');
  }
  long long s = (negative ? -v : v) * 1000000000LL;
  __atomic_store_n(&shift_ns, s, __ATOMIC_RELAXED);
  return s;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  int r = (int) syscall(SYS_clock_gettime, id, ts);
  if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
    long long s = shift();
    if (s != 0) {
      long long t = (long long) ts->tv_sec * 1000000000LL + ts->tv_nsec + s;
      ts->tv_sec = (time_t) (t / 1000000000LL);
      ts->tv_nsec = (long) (t % 1000000000LL);
    }
  }
  return r;
}

int gettimeofday(struct timeval *tv, void *tz) {
  (void) tz;
  struct timespec ts;
  int r = clock_gettime(CLOCK_REALTIME, &ts);
  if (r == 0 && tv != NULL) {
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
  }
  return r;
}

time_t time(time_t *out) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out != NULL) {
    *out = ts.tv_sec;
  }
  return ts.tv_sec;
}
