package feed

import (
	"context"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/internal/stacktest"
)

func TestMain(m *testing.M) {
	if os.Getenv(envKillChild) != "" {
		// Re-executed by TestFanoutSurvivesSIGKILL: be the worker to kill.
		os.Exit(runKillChild())
	}
	os.Exit(stacktest.Main(m))
}

// testBackends is a database and a Redis key prefix of one test's own.
type testBackends struct {
	db     *pgxpool.Pool
	dbURL  string
	rdb    redis.UniversalClient
	prefix string
}

// newBackends creates a fresh database (dropped at the end of the test) and
// a unique Redis key prefix (its keys deleted at the end) on the single
// Redis.
func newBackends(t testing.TB) testBackends {
	t.Helper()
	return newBackendsOn(t, stacktest.SingleRedis(t))
}

// newBackendsOn is newBackends on rdb (a single Redis or a cluster).
func newBackendsOn(t testing.TB, rdb redis.UniversalClient) testBackends {
	t.Helper()
	st := stacktest.Require(t)
	ns := stacktest.Namespace(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, st.PostgresURL)
	if err != nil {
		t.Fatalf("connect to postgres: %v", err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+ns); err != nil {
		admin.Close(ctx)
		t.Fatalf("create database %s: %v", ns, err)
	}
	admin.Close(ctx)
	u, err := url.Parse(st.PostgresURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + ns
	db, err := pgxpool.New(ctx, u.String())
	if err != nil {
		t.Fatalf("open pool on %s: %v", ns, err)
	}
	b := testBackends{db: db, dbURL: u.String(), rdb: rdb, prefix: ns + ":"}
	t.Cleanup(func() {
		ctx := context.Background()
		db.Close()
		stacktest.DeleteKeys(ctx, rdb, b.prefix+"*", "{"+b.prefix+"*")
		if admin, err := pgx.Connect(ctx, st.PostgresURL); err == nil {
			admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ns+" WITH (FORCE)")
			admin.Close(ctx)
		}
	})
	return b
}

// testConfig is a configuration with short timings for tests.
func testConfig(strategy Strategy, prefix string) Config {
	cfg := Defaults()
	cfg.Strategy = strategy
	cfg.KeyPrefix = prefix
	cfg.ReadBlock = 100 * time.Millisecond
	cfg.ClaimMinIdle = 500 * time.Millisecond
	cfg.ClaimInterval = 100 * time.Millisecond
	cfg.RelayInterval = 100 * time.Millisecond
	return cfg
}

// newService migrates b's database and builds a service on it.
func newService(t testing.TB, b testBackends, cfg Config) *Service {
	t.Helper()
	if _, err := Migrate(context.Background(), b.db); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	svc, err := NewService(cfg, b.db, b.rdb, nil, nil)
	if err != nil {
		t.Fatalf("NewService: %v", err)
	}
	return svc
}

// startWorkers runs the service's workers until the test ends.
func startWorkers(t testing.TB, svc *Service) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := svc.RunWorkers(ctx); err != nil {
			t.Errorf("RunWorkers: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// waitSettled waits until no fan-out work is left.
func waitSettled(t testing.TB, svc *Service) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := svc.Backlog(context.Background())
		if err != nil {
			t.Fatalf("Backlog: %v", err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("fan-out did not settle in 30s: %d items left", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustUser(t testing.TB, svc *Service, name string) int64 {
	t.Helper()
	u, err := svc.CreateUser(context.Background(), name, "")
	if err != nil {
		t.Fatalf("CreateUser(%q): %v", name, err)
	}
	return u.ID
}

func mustFollow(t *testing.T, svc *Service, follower, followee int64) {
	t.Helper()
	if err := svc.Follow(context.Background(), follower, followee); err != nil {
		t.Fatalf("Follow(%d, %d): %v", follower, followee, err)
	}
}

func mustPost(t *testing.T, svc *Service, author int64, text string) Post {
	t.Helper()
	p, err := svc.CreatePost(context.Background(), author, text)
	if err != nil {
		t.Fatalf("CreatePost(%d, %q): %v", author, text, err)
	}
	return p
}

// feedTexts returns the texts of the user's first feed page, newest first.
func feedTexts(t *testing.T, svc *Service, user int64, limit int) []string {
	t.Helper()
	page, err := svc.Feed(context.Background(), user, 0, limit)
	if err != nil {
		t.Fatalf("Feed(%d): %v", user, err)
	}
	texts := make([]string, len(page.Posts))
	for i, p := range page.Posts {
		texts[i] = p.Text
	}
	return texts
}
