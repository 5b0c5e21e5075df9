// Package testenv decides what a test does when a real server it needs is
// missing.
//
// Invariant: in CI (CI set to anything but "", "0" or "false") a missing
// server fails the test; only locally is it skipped.
package testenv

import (
	"os"
	"strings"
	"testing"
)

// InCI reports whether the tests run in CI.
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "0" && v != "false"
}

// Unavailable fails the test in CI and skips it locally.
func Unavailable(t testing.TB, err error) {
	t.Helper()
	if InCI() {
		t.Fatalf("a real server is required in CI: %v", err)
	}
	t.Skipf("no real server (%v); run scripts/test.sh or `baedal up`", err)
}
