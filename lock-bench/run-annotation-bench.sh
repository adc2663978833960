#!/usr/bin/env bash
# Measures what @Locked adds per call over a direct acquire/release on local: (no server needed)
# and writes its section of lock-bench/RESULTS.md. About a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
MVN_LOCK=${LOCKSMITH_MVN_LOCK:-/tmp/mvn.lock}
flock "$MVN_LOCK" mvn -B -ntp -q package -pl lock-bench -am -DskipTests
java -cp "lock-bench/target/classes:lock-bench/target/bench-lib/*" dev.locksmith.bench.AnnotationOverheadMain lock-bench/RESULTS.md
