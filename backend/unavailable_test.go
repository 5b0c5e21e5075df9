package backend

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/internal/osapi"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestDownBackendsAreUnavailable: the real Redis, PostgreSQL and OpenSearch
// clients,
// pointed at a port nothing listens on, fail with errors that the API maps
// to 503 naming the backend (not a 500).
func TestDownBackendsAreUnavailable(t *testing.T) {
	cfg := Defaults()
	cfg.Redis.Addr = closedPort(t)
	cfg.Postgres.URL = "postgres://u:secretpw@" + closedPort(t) + "/db?sslmode=disable"
	cfg.OpenSearch.URLs = []string{"http://" + closedPort(t)}
	cfg.Redis.DialTimeout, cfg.Postgres.ConnectTimeout = time.Second, time.Second
	ctx := context.Background()
	c, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	checks := map[string]error{
		"redis":      c.Redis.Get(ctx, "k").Err(),
		"postgresql": c.Postgres.Ping(ctx),
		"opensearch": osapi.New(c.OpenSearch).Do(ctx, "GET", "/_cluster/health", nil, nil),
	}
	for want, err := range checks {
		if err == nil {
			t.Fatalf("%s on a closed port: no error", want)
		}
		p := api.ProblemOf(err)
		if p.Status != 503 || p.Unavailable != want || p.RetryAfter <= 0 {
			t.Errorf("%s down: problem %+v from %v, want 503 naming %s with Retry-After", want, p, err, want)
		}
	}
}
