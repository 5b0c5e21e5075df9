#!/bin/sh
# Regenerates click.pb.go from click.proto.
#
# Needs protoc from Debian's protobuf-compiler package (apt-get install
# protobuf-compiler). protoc-gen-go is built from the google.golang.org/protobuf
# version pinned in go.mod, so the generated code always matches the runtime.
#
# Run from anywhere: sh linkstore/linkpb/gen.sh   (or: go generate ./linkstore/linkpb)
set -eu
dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$dir" && go build -o "$tmp/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go)
cd "$dir"
protoc --plugin=protoc-gen-go="$tmp/protoc-gen-go" \
	--go_out=. --go_opt=paths=source_relative \
	click.proto
