package app

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// TestHealthzReportsADownBackend serves against the real stack's OpenSearch
// and PostgreSQL and a Redis of its own, then kills that Redis (by PID) while
// the server runs: /healthz must turn 503 and name Redis as the one down.
func TestHealthzReportsADownBackend(t *testing.T) {
	st := stacktest.Require(t)
	redisAddr, killRedis := startRedis(t)

	cfg := Defaults()
	cfg.API.Addr = "127.0.0.1:0"
	cfg.Workers = false // this test is about health
	cfg.Backends.OpenSearch.URLs = st.OpenSearchURLs
	cfg.Backends.Redis.Addr = redisAddr
	cfg.Backends.Postgres.URL = st.PostgresURL
	cfg.Indexer.Layout.Prefix = stacktest.Namespace(t) + "_"
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, nil, func(a string) { addrc <- a }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		done <- nil // for the deferred receive
		t.Fatalf("Run ended early: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("server did not start")
	}

	checkHealth(t, addr, http.StatusOK, true)
	killRedis()
	checkHealth(t, addr, http.StatusServiceUnavailable, false)
}

func checkHealth(t *testing.T, addr string, status int, redisUp bool) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status   string `json:"status"`
		Backends []struct {
			Name    string `json:"name"`
			Healthy bool   `json:"healthy"`
			Error   string `json:"error"`
		} `json:"backends"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status {
		t.Errorf("status %d, want %d: %+v", resp.StatusCode, status, body)
	}
	seen := map[string]bool{}
	for _, b := range body.Backends {
		seen[b.Name] = true
		want := b.Name != "redis" || redisUp
		if b.Healthy != want {
			t.Errorf("%s healthy=%v, want %v (error %q)", b.Name, b.Healthy, want, b.Error)
		}
		if !b.Healthy && b.Error == "" {
			t.Errorf("%s is down without an error message", b.Name)
		}
	}
	for _, name := range []string{"opensearch", "redis", "postgres"} {
		if !seen[name] {
			t.Errorf("healthz does not report %s", name)
		}
	}
}

// startRedis runs a throw-away redis-server (installed with the stack) on a
// free loopback port and returns its address and a func that kills it.
func startRedis(t *testing.T) (string, func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		testenv.Unavailable(t, err)
	}
	killed := false
	kill := func() {
		if !killed {
			killed = true
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(kill)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr, kill
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("redis-server on %s did not start", addr)
	return "", nil
}

func TestValidateJoinsEveryComponent(t *testing.T) {
	cfg := Defaults()
	err := cfg.Validate()
	if err == nil {
		t.Fatal("defaults without backend addresses must be invalid")
	}
	for _, field := range []string{"opensearch-urls", "redis-addr", "postgres-url"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q does not name %s", err, field)
		}
	}
	cfg.Backends.OpenSearch.URLs = []string{"ftp://x"}
	cfg.Backends.Redis.Addr = "127.0.0.1:1"
	cfg.Backends.Postgres.URL = "postgres://u:pw@127.0.0.1:1/db"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `"ftp://x"`) {
		t.Errorf("a bad OpenSearch URL must be named: %v", err)
	}
}
