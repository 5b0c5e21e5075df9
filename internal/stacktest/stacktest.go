// Package stacktest gives tests a real running local stack (OpenSearch, Redis,
// PostgreSQL), started once per test run rather than once per test.
//
// The test script (scripts/test.sh) starts one stack and exports its state
// directory in BAEDAL_TEST_STATE_DIR; every test package then shares it. Run
// alone (`go test ./somepkg`), a package whose TestMain calls Main starts its
// own stack in a temporary directory and stops it when its tests end. The
// same holds for the Redis Cluster the multi-key tests also run on
// (ForEachRedis; BAEDAL_TEST_REDIS_CLUSTER_STATE_DIR).
//
// Invariant: when the stack cannot be reached, a test fails if CI is set and
// is skipped otherwise (see testenv); it never passes silently.
package stacktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/internal/testenv"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/localstack"
)

// EnvStateDir names the variable that points tests at a running stack.
const EnvStateDir = "BAEDAL_TEST_STATE_DIR"

var (
	mu        sync.Mutex
	mainUsed  bool
	ownDir    string
	state     *localstack.State
	stateErr  error
	startOnce sync.Once
)

// Main runs the tests of a package and stops the stack it started, if any.
// Use it from TestMain: func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }
func Main(m *testing.M) int {
	mu.Lock()
	mainUsed = true
	mu.Unlock()
	code := m.Run()
	stopOwnRedisCluster(code)
	if ownDir != "" {
		if err := localstack.Down(ownDir, os.Stderr); err != nil {
			fmt.Fprintf(os.Stderr, "stacktest: stop the stack in %s: %v\n", ownDir, err)
		}
		if code == 0 {
			os.RemoveAll(ownDir)
		} else {
			fmt.Fprintf(os.Stderr, "stacktest: kept the stack's logs in %s/logs\n", ownDir)
		}
	}
	return code
}

// Require returns the running stack, or fails (CI) / skips (locally) the test.
func Require(t testing.TB) *localstack.State {
	t.Helper()
	startOnce.Do(func() { state, stateErr = find() })
	if stateErr != nil {
		testenv.Unavailable(t, stateErr)
	}
	return state
}

func find() (*localstack.State, error) {
	if dir := os.Getenv(EnvStateDir); dir != "" {
		st, err := localstack.Load(dir)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", EnvStateDir, dir, err)
		}
		return st, nil
	}
	mu.Lock()
	used := mainUsed
	mu.Unlock()
	if !used {
		return nil, fmt.Errorf("%s is not set and this package's TestMain does not call stacktest.Main, so it cannot start a stack of its own", EnvStateDir)
	}
	dir, err := os.MkdirTemp("", "baedal-test-stack-")
	if err != nil {
		return nil, err
	}
	ownDir = dir
	// PostgreSQL runs as the postgres user, which must reach the state dir.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	cfg := localstack.Defaults()
	cfg.StateDir = dir
	cfg.PortBase = 0
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	return localstack.Up(ctx, cfg, os.Stderr)
}

// Namespace returns a name unique to this test and run, usable as a Redis key
// prefix, an index name prefix or a database name (lower case, [a-z0-9_]).
func Namespace(t testing.TB) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '_'
	}, t.Name())
	if len(name) > 40 {
		name = name[:40]
	}
	return "t_" + name + "_" + hex.EncodeToString(b)
}

// Layouts returns the layouts the stack runs (layout.RunnableKinds). In CI
// the local stack loads the baedal-hot plugin, so a layout the stack cannot
// run fails the test there; locally the test goes on without it, saying so.
func Layouts(t testing.TB, osc *osapi.Client) []layout.Kind {
	t.Helper()
	kinds, unavailable, err := layout.RunnableKinds(context.Background(), osc)
	if err != nil {
		t.Fatal(err)
	}
	for k, why := range unavailable {
		if testenv.InCI() {
			t.Fatalf("the %s layout is untested: %s", k, why)
		}
		t.Logf("the %s layout is not tested: %s", k, why)
	}
	return kinds
}
