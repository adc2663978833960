#!/usr/bin/env bash
# Runs every lock-bench measurement and writes lock-bench/RESULTS.md and lock-bench/results.svg.
#
#   lock-bench/run-bench.sh            full run (about 25-30 minutes on 2 cores)
#   lock-bench/run-bench.sh --quick    short runs (about 5 minutes): a smoke test, figures indicative only
#   lock-bench/run-bench.sh --only contended[,uncontended,scale]
#   lock-bench/run-bench.sh --only cluster    the Redis Cluster section only (about 5 minutes; also starts a 6-node Cluster)
#   lock-bench/run-bench.sh --only jdbc-peers   JDBC peers on MariaDB and PostgreSQL: its own section of RESULTS.md (about 6 minutes)
#   lock-bench/run-bench.sh --only semaphores   one permit of a semaphore: Locksmith vs Redisson (Redis) and Curator (ZooKeeper), its own section (about 5 minutes)
#   lock-bench/run-bench.sh --only reactive     ReactiveLocks against the blocking API (local:, Redis) and Redisson's RLockReactive, its own section (about 4 minutes)
#   lock-bench/run-bench.sh --only elections    election hand-over and observe: Locksmith vs Curator's LeaderLatch (ZooKeeper) and jetcd's Election (etcd), its own section (about 3 minutes)
#   lock-bench/run-bench.sh --only sets         lock sets of 2 and 10 names: Locksmith vs RedissonMultiLock (Redis) and Curator's InterProcessMultiLock (ZooKeeper), uncontended and contended, its own section (about 9 minutes)
#   BENCH_SOURCE=head lock-bench/run-bench.sh   measure the last commit (built in a scratch copy), not the working tree
#
# Builds lock-bench and the backends it uses, starts redis-server, etcd, ZooKeeper and MariaDB on free loopback
# ports (data in a temporary directory, removed at the end), runs the benchmarks against them
# and stops them again. Needs: java 17+, mvn, redis-server, etcd, mariadb (bash .ci/install installs them); --only jdbc-peers
# also starts a private PostgreSQL (/usr/lib/postgresql/*/bin).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

MVN_LOCK=${LOCKSMITH_MVN_LOCK:-/tmp/mvn.lock}
MVN_FLAGS=${BENCH_MVN_FLAGS:-}

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "run-bench.sh: $1 not found; install it with: $2 (bash .ci/install does this)" >&2; exit 1; }
}
need java "apt-get install openjdk-17-jdk-headless"
need mvn "apt-get install maven"
need redis-server "apt-get install redis-server"
need etcd "apt-get install etcd-server"
need python3 "apt-get install python3"
need mariadbd "apt-get install mariadb-server"
need mariadb-install-db "apt-get install mariadb-server"
need mariadb "apt-get install mariadb-client"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

wait_port() { # name port seconds
  local deadline=$((SECONDS + $3))
  until (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null; do
    if ((SECONDS > deadline)); then
      echo "run-bench.sh: $1 did not open port $2 within $3 s; its log:" >&2
      tail -20 "$WORK/$1.log" >&2 || true
      exit 1
    fi
    sleep 0.1
  done
}

SHM=/dev/shm
[ -d "$SHM" ] && [ -w "$SHM" ] || SHM=${TMPDIR:-/tmp}
WORK=$(mktemp -d "$SHM/lock-bench.XXXXXX")
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# BENCH_SOURCE=head measures the last commit, built in a scratch copy (what RESULTS.md records);
# by default the working tree is built, so a backend's author can measure a change before committing it.
SRC="$ROOT"
if [ "${BENCH_SOURCE:-tree}" = head ]; then
  SRC="$WORK/src"
  mkdir -p "$SRC"
  git -C "$ROOT" archive HEAD | tar -x -C "$SRC"
fi
echo "== building lock-bench and the backends it measures (from ${BENCH_SOURCE:-tree})"
rm -rf "$SRC/lock-bench/target/bench-lib" # copy-dependencies adds, never removes: no stale jars from an earlier build
# -DskipTests, not -Dmaven.test.skip: the tests do not run, but their classes are built, because some modules
# depend on another's test jar (lock-redis on lock-api's), which -Dmaven.test.skip would leave unmade.
flock "$MVN_LOCK" mvn -B -ntp -q $MVN_FLAGS -f "$SRC/pom.xml" -pl lock-bench -am package -DskipTests
# A private copy of the classes and jars: other builds may rewrite the modules' target/ during the run.
SNAP="$WORK/run"
mkdir -p "$SNAP" && cp -r "$SRC/lock-bench/target/classes" "$SNAP/classes" && cp -r "$SRC/lock-bench/target/bench-lib" "$SNAP/lib"
CP="$SNAP/classes:$SNAP/lib/*"

echo "== starting servers on loopback (work dir $WORK)"
REDIS_PORT=$(free_port)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
wait_port redis "$REDIS_PORT" 20
export BENCH_REDIS="127.0.0.1:$REDIS_PORT"
export BENCH_REDIS_VERSION="$(redis-server --version | sed 's/ sha=.*//')"

# The Redis Cluster section (--only ...cluster...): 6 cluster-enabled nodes, 3 primaries and 3 replicas.
WANT_CLUSTER=no
for ((i = 1; i < $#; i++)); do
  if [ "${!i}" = --only ]; then j=$((i + 1)); [[ ",${!j}," == *,cluster,* ]] && WANT_CLUSTER=yes; fi
done
if [ "$WANT_CLUSTER" = yes ]; then
  need redis-cli "apt-get install redis-tools"
  CLUSTER_NODES=()
  for n in 1 2 3 4 5 6; do
    port=$(free_port)
    while ((port + 10000 > 65535)); do port=$(free_port); done # the Cluster bus listens on port + 10000
    mkdir -p "$WORK/cluster-$n"
    redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --protected-mode no \
      --cluster-enabled yes --cluster-config-file "$WORK/cluster-$n/nodes.conf" --cluster-node-timeout 5000 \
      --cluster-announce-ip 127.0.0.1 --dir "$WORK/cluster-$n" >"$WORK/cluster-$n.log" 2>&1 &
    PIDS+=($!)
    wait_port "cluster-$n" "$port" 20
    CLUSTER_NODES+=("127.0.0.1:$port")
  done
  redis-cli --cluster create "${CLUSTER_NODES[@]}" --cluster-replicas 1 --cluster-yes >"$WORK/cluster-create.log" 2>&1 \
    || { echo "run-bench.sh: redis-cli --cluster create failed:" >&2; tail -20 "$WORK/cluster-create.log" >&2; exit 1; }
  for _ in $(seq 1 300); do
    healthy=yes
    for node in "${CLUSTER_NODES[@]}"; do
      redis-cli -h 127.0.0.1 -p "${node#*:}" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || healthy=no
    done
    [ "$healthy" = yes ] && break
    sleep 0.1
  done
  [ "$healthy" = yes ] || { echo "run-bench.sh: the Redis Cluster did not reach cluster_state:ok within 30 s" >&2; exit 1; }
  export BENCH_REDIS_CLUSTER="${CLUSTER_NODES[0]},${CLUSTER_NODES[1]},${CLUSTER_NODES[2]}"
fi

ETCD_PORT=$(free_port)
ETCD_PEER=$(free_port)
etcd --name bench --data-dir "$WORK/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
  --initial-cluster "bench=http://127.0.0.1:$ETCD_PEER" >"$WORK/etcd.log" 2>&1 &
PIDS+=($!)
wait_port etcd "$ETCD_PORT" 30
export BENCH_ETCD="127.0.0.1:$ETCD_PORT"
export BENCH_ETCD_VERSION="etcd $(etcd --version | awk '/etcd Version/ {print $3}') (data on $(basename "$SHM"))"

ZK_PORT=$(free_port)
mkdir -p "$WORK/zookeeper"
cat >"$WORK/zoo.cfg" <<CFG
tickTime=2000
dataDir=$WORK/zookeeper
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
CFG
# ZooKeeper's own server class, from the zookeeper jar that Curator brings, in a JVM of its own.
java -Xmx256m -XX:+UseSerialGC -Dzookeeper.admin.enableServer=false -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
  -cp "$SNAP/lib/*" org.apache.zookeeper.server.ZooKeeperServerMain "$WORK/zoo.cfg" >"$WORK/zookeeper.log" 2>&1 &
PIDS+=($!)
wait_port zookeeper "$ZK_PORT" 60
export BENCH_ZOOKEEPER="127.0.0.1:$ZK_PORT"
ZK_JAR=$(ls "$SNAP/lib" | grep -E '^zookeeper-[0-9]' | head -1)
export BENCH_ZOOKEEPER_VERSION="ZooKeeper ${ZK_JAR#zookeeper-} (ZooKeeperServerMain, data on $(basename "$SHM"))"
export BENCH_ZOOKEEPER_VERSION="${BENCH_ZOOKEEPER_VERSION/.jar/}"

DB_PORT=$(free_port)
mkdir -p "$WORK/mariadb"
AS_ROOT=()
[ "$(id -u)" = 0 ] && AS_ROOT=(--user=root)
mariadb-install-db --no-defaults --datadir="$WORK/mariadb" --auth-root-authentication-method=normal --skip-test-db \
  --skip-name-resolve "${AS_ROOT[@]}" >"$WORK/mariadb-install.log" 2>&1
# As lock-jdbc's tests run it: no binary log, redo log flushed once a second (not per commit).
mariadbd --no-defaults --datadir="$WORK/mariadb" --port="$DB_PORT" --bind-address=127.0.0.1 --socket="$WORK/mysqld.sock" \
  --pid-file="$WORK/mysqld.pid" --skip-name-resolve --skip-log-bin --max-connections=1000 --innodb-buffer-pool-size=64M \
  --innodb-flush-log-at-trx-commit=2 --skip-performance-schema "${AS_ROOT[@]}" >"$WORK/mariadb.log" 2>&1 &
PIDS+=($!)
wait_port mariadb "$DB_PORT" 60
for _ in $(seq 1 100); do
  mariadb -h127.0.0.1 -P"$DB_PORT" -uroot -e "CREATE DATABASE IF NOT EXISTS locks" 2>/dev/null && break
  sleep 0.2
done
export BENCH_JDBC="127.0.0.1:$DB_PORT"
export BENCH_MARIADB_VERSION="$(mariadbd --version | sed 's/^.*Ver /MariaDB /; s/ for .*//') (--innodb-flush-log-at-trx-commit=2, data on $(basename "$SHM"))"

# The jdbc-peers section only: a private PostgreSQL (initdb + postgres, as the postgres user when run as root).
if [[ " $* " == *jdbc-peers* ]]; then
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -x "$PG_BIN/postgres" ] || { echo "run-bench.sh: PostgreSQL not found in /usr/lib/postgresql/*/bin; install it with: apt-get install postgresql (bash .ci/install does this)" >&2; exit 1; }
  PG_PORT=$(free_port)
  AS_PG=()
  if [ "$(id -u)" = 0 ]; then
    chmod o+x "$WORK" # the postgres user reaches its data directory below the (private) work dir
    install -d -o postgres -g postgres "$WORK/pg"
    AS_PG=(setpriv --reuid=postgres --regid=postgres --clear-groups)
  else
    mkdir -p "$WORK/pg"
  fi
  "${AS_PG[@]}" "$PG_BIN/initdb" -D "$WORK/pg/data" -A trust -U postgres -E UTF8 --locale=C --no-sync >"$WORK/postgres-init.log" 2>&1
  # As lock-jdbc's tests run it: no fsync (data on tmpfs anyway).
  "${AS_PG[@]}" "$PG_BIN/postgres" -D "$WORK/pg/data" -p "$PG_PORT" -k "$WORK/pg" -c listen_addresses=127.0.0.1 -c fsync=off \
    -c full_page_writes=off -c max_connections=500 -c shared_buffers=32MB >"$WORK/postgres.log" 2>&1 &
  PIDS+=($!)
  wait_port postgres "$PG_PORT" 60
  export BENCH_PG="127.0.0.1:$PG_PORT"
  export BENCH_PG_VERSION="$("$PG_BIN/postgres" --version | sed 's/^postgres (PostgreSQL) /PostgreSQL /') (fsync=off, data on $(basename "$SHM"))"
fi

if [ "${BENCH_SOURCE:-tree}" = head ]; then
  export BENCH_COMMAND="BENCH_SOURCE=head lock-bench/run-bench.sh${*:+ $*}"
  export BENCH_GIT="$(git rev-parse --short HEAD), built from the commit"
else
  export BENCH_COMMAND="lock-bench/run-bench.sh${*:+ $*}"
  export BENCH_GIT="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- lock-api lock-redis lock-etcd lock-zookeeper lock-jdbc lock-bench 2>/dev/null || echo ' + uncommitted changes in the working tree')"
fi
export BENCH_LOAD_NOTE="at start: load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores (nproc), $(free -m | awk '/^Mem:/ {print $2 " MiB total, " $7 " MiB available"}') (free -m)"

echo "== running (redis $BENCH_REDIS, etcd $BENCH_ETCD, zookeeper $BENCH_ZOOKEEPER, mariadb $BENCH_JDBC)"
mkdir -p "$ROOT/lock-bench/target"
java -Xmx512m -cp "$CP" dev.locksmith.bench.BenchMain --out "$ROOT/lock-bench" "$@" 2>&1 | tee "$ROOT/lock-bench/target/bench.log"
echo "== wrote lock-bench/RESULTS.md and lock-bench/results.svg"
