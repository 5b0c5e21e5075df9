package app

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/baedal/baedal/internal/stacktest"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// TestHealthzReportsADownBackend points Redis at a closed port while
// OpenSearch and PostgreSQL are the real, running ones.
func TestHealthzReportsADownBackend(t *testing.T) {
	st := stacktest.Require(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := closed.Addr().String()
	closed.Close()

	for _, tc := range []struct {
		name      string
		redisAddr string
		status    int
		redisUp   bool
	}{
		{"all up", st.RedisAddr, http.StatusOK, true},
		{"redis down", deadAddr, http.StatusServiceUnavailable, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Defaults()
			cfg.API.Addr = "127.0.0.1:0"
			cfg.Workers = false // this test is about health, and Redis may be down
			cfg.Backends.OpenSearch.URLs = st.OpenSearchURLs
			cfg.Backends.Redis.Addr = tc.redisAddr
			cfg.Backends.Postgres.URL = st.PostgresURL
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
				t.Fatalf("Run ended early: %v", err)
			case <-time.After(30 * time.Second):
				t.Fatal("server did not start")
			}
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
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d: %+v", resp.StatusCode, tc.status, body)
			}
			seen := map[string]bool{}
			for _, b := range body.Backends {
				seen[b.Name] = true
				want := b.Name != "redis" || tc.redisUp
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
		})
	}
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
