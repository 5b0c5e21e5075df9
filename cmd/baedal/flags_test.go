package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's `baedal search q=… --layout nested`: flags after the search
// parameters are flags, not parameters.
func TestSearchTakesFlagsAfterParameters(t *testing.T) {
	err := runSearch(context.Background(), []string{"q=치킨", "lat=37.5", "lon=127.03", "--layout", "sideways", "--opensearch-urls", "http://127.0.0.1:1"})
	if err == nil || !strings.HasPrefix(err.Error(), "--layout:") {
		t.Fatalf("runSearch = %v, want the --layout flag parsed (and its bad value named)", err)
	}
	if _, err := searchParams([]string{"q=a", "q=b"}); err == nil {
		t.Error("a search parameter given twice was accepted")
	}
	if p, err := searchParams([]string{"q=a=b", "sort=eta"}); err != nil || p.Get("q") != "a=b" || p.Get("sort") != "eta" {
		t.Errorf("searchParams = %v, %v", p, err)
	}
}

// `baedal up` checks every flag, the server's too, before it installs or
// starts anything: the state directory stays empty.
func TestUpChecksEveryFlagBeforeStarting(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	err := runUp(context.Background(), []string{"--state-dir", dir, "--opensearch-nodes", "2", "--max-body-bytes", "1", "--demo-rate", "-5", "--admin-token", "short"})
	if err == nil {
		t.Fatal("up accepted invalid flags")
	}
	for _, flag := range []string{"opensearch-nodes", "max-body-bytes", "demo-rate"} {
		if !strings.Contains(err.Error(), flag) {
			t.Errorf("error %q does not name %s", err, flag)
		}
	}
	// A stack flag is invalid too (so that a regression cannot start a
	// stack here): both are named.
	err = runUp(context.Background(), []string{"--state-dir", dir, "--start-timeout", "1s", "--admin-token", "short"})
	if err == nil || !strings.Contains(err.Error(), "admin-token") {
		t.Errorf("up with a short admin token: %v, want it named", err)
	}
	if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
		t.Errorf("up created %s before refusing its flags", dir)
	}
}

// Subcommands take their flags before or after the subcommand word.
func TestSubcommandWordAndFlagsInAnyOrder(t *testing.T) {
	err := runLinks(context.Background(), []string{"--set", "sideways", "mode", "--redis-addr", "no-port"})
	if err == nil || strings.Contains(err.Error(), "usage:") {
		t.Errorf("links with flags before mode: %v, want the flags parsed and the mode word found", err)
	}
	if err := runLinks(context.Background(), []string{"--set", "dual-write"}); err == nil || !strings.Contains(err.Error(), "usage:") {
		t.Errorf("links without the subcommand: %v, want usage", err)
	}
}
