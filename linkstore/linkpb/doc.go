// Package linkpb holds the protobuf schema (click.proto) of the compact
// click / deferred-deep-link record and its generated Go code (click.pb.go).
//
// Invariant: click.pb.go is generated, never edited by hand; it is exactly
// what gen.sh produces from click.proto with protoc-gen-go at the
// google.golang.org/protobuf version pinned in go.mod. Regenerate with:
//
//	go generate ./linkstore/linkpb
//
// which runs gen.sh (needs protoc: apt-get install protobuf-compiler).
// Application code uses the linkstore.Record type; this package is the wire
// schema only.
package linkpb

//go:generate sh gen.sh
