package app

import (
	"encoding/json"
	"io"
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
// the server runs: /healthz must turn 503 and name Redis as the one down,
// and routes that need Redis answer 503 with Retry-After naming it.
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
	addr := serve(t, cfg)

	httpc := validatingClient(t)
	checkHealth(t, httpc, addr, http.StatusOK, true)
	waitReady(t, addr, cfg.Indexer.Layouts, 0) // one node: auto-expand 0-1 gives 0 replicas
	killRedis()
	checkHealth(t, httpc, addr, http.StatusServiceUnavailable, false)
	// A route that needs the Redis that is down answers 503, not 500.
	checkUnavailable(t, addr, "POST", "/v1/events", `{"type":"shop","id":1,"version":1,"op":"delete"}`, "redis")
	checkUnavailable(t, addr, "GET", "/v1/users/1/feed", "", "redis")
}

// With several OpenSearch URLs every request goes through the C3 endpoint
// selector: the client itself is given only the first URL, a dead one here,
// so searches succeed only because the selector sends them to the live
// endpoint, and its statistics (admin endpoint) show where they went.
func TestSeveralOpenSearchURLsGoThroughTheEndpointSelector(t *testing.T) {
	st := stacktest.Require(t)
	dead := "http://127.0.0.1:1"
	cfg := Defaults()
	cfg.API.Addr = "127.0.0.1:0"
	cfg.API.AdminToken = "test-admin-token"
	cfg.Workers = false
	cfg.Backends.OpenSearch.URLs = []string{dead, st.OpenSearchURLs[0]}
	cfg.Backends.Redis.Addr = st.RedisAddr
	cfg.Backends.Postgres.URL = st.PostgresURL
	cfg.Indexer.Layout.Prefix = stacktest.Namespace(t) + "_"
	addr := serve(t, cfg)
	httpc := validatingClient(t)

	// The search indices are created in the background after start-up.
	search := func() (int, string) {
		resp, err := httpc.Get("http://" + addr + "/v1/search?q=%ED%94%BC%EC%9E%90&lat=37.5&lon=127.0")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if code, body := search(); code == http.StatusOK {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("search: status %d: %s", code, body)
		}
	}
	for i := 0; i < 5; i++ {
		if code, body := search(); code != http.StatusOK {
			t.Fatalf("search %d: status %d: %s", i, code, body)
		}
	}

	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/admin/opensearch-endpoints", nil)
	req.Header.Set("Authorization", "Bearer "+cfg.API.AdminToken)
	resp, err := httpc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var status struct {
		Policy    string `json:"policy"`
		Endpoints []struct {
			Host     string
			Chosen   uint64
			Failures uint64
		} `json:"endpoints"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&status); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || len(status.Endpoints) != 2 {
		t.Fatalf("status %d, endpoints %+v", resp.StatusCode, status.Endpoints)
	}
	if status.Policy != "c3" {
		t.Errorf("policy %q, want c3 (the default)", status.Policy)
	}
	deadEP, live := status.Endpoints[0], status.Endpoints[1]
	if want := strings.TrimPrefix(st.OpenSearchURLs[0], "http://"); deadEP.Host != "127.0.0.1:1" || live.Host != want {
		t.Errorf("endpoints %q, %q; want 127.0.0.1:1, %q", deadEP.Host, live.Host, want)
	}
	if live.Chosen < 5 {
		t.Errorf("live endpoint chosen %d times, want at least the 5 searches", live.Chosen)
	}
	if deadEP.Chosen != deadEP.Failures {
		t.Errorf("dead endpoint: chosen %d, failed %d; every request to it must fail", deadEP.Chosen, deadEP.Failures)
	}
}

// serve runs the server with cfg until the test ends and returns its
// address.
func serve(t *testing.T, cfg Config) string {
	t.Helper()
	return serveLogged(t, cfg, nil)
}

func checkHealth(t *testing.T, httpc *http.Client, addr string, status int, redisUp bool) {
	t.Helper()
	resp, err := httpc.Get("http://" + addr + "/healthz")
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
	cfg.Backends.OpenSearch.URLs = []string{"http://127.0.0.1:9200"}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("a valid configuration: %v", err)
	}
	// A search deadline the OpenSearch client would cut first.
	cfg.Search.Timeout = cfg.Backends.OpenSearch.RequestTimeout
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "search-timeout") {
		t.Errorf("a search timeout as long as the OpenSearch client's must be refused naming search-timeout: %v", err)
	}
	cfg.Search.Timeout = Defaults().Search.Timeout
	cfg.HotPluginCheckEvery = 0
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "hot-plugin-check-every") {
		t.Errorf("a zero plugin check period must be refused naming hot-plugin-check-every: %v", err)
	}
}
