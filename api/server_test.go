package api

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func newTestServer(cfg Config) *Server {
	return New(cfg, nil, prometheus.NewRegistry())
}

func decodeProblem(t *testing.T, rec *httptest.ResponseRecorder) Problem {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q, want application/problem+json", ct)
	}
	var p Problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("body is not a problem: %v: %s", err, rec.Body)
	}
	if p.Status != rec.Code {
		t.Fatalf("problem status %d != HTTP status %d", p.Status, rec.Code)
	}
	return p
}

func TestErrorsAreProblemBodies(t *testing.T) {
	cfg := Defaults()
	cfg.MaxBodyBytes = 1024
	s := newTestServer(cfg)
	s.Handle("POST /echo", func(w http.ResponseWriter, r *http.Request) error {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		if len(body) == 0 {
			return BadRequest("body", "must not be empty")
		}
		w.Write(body)
		return nil
	})
	s.Handle("GET /boom", func(w http.ResponseWriter, r *http.Request) error { panic("boom") })
	s.Handle("GET /internal", func(w http.ResponseWriter, r *http.Request) error {
		return errors.New("dial tcp 10.0.0.1:5432: secret detail")
	})

	cases := []struct {
		method, path, body string
		status             int
		field, allow       string
	}{
		{"POST", "/echo", "", 400, "body", ""},
		{"POST", "/echo", strings.Repeat("x", 2000), 413, "body", ""},
		{"GET", "/nope", "", 404, "", ""},
		{"GET", "/echo", "", 405, "", "POST"},
		{"DELETE", "/metrics", "", 405, "", "GET, HEAD"},
		{"GET", "/boom", "", 500, "", ""},
		{"GET", "/internal", "", 500, "", ""},
	}
	for _, tc := range cases {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
		if rec.Code != tc.status {
			t.Errorf("%s %s: status %d, want %d (%s)", tc.method, tc.path, rec.Code, tc.status, rec.Body)
			continue
		}
		if allow := rec.Header().Get("Allow"); allow != tc.allow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, allow, tc.allow)
		}
		p := decodeProblem(t, rec)
		if p.Field != tc.field {
			t.Errorf("%s %s: field %q, want %q", tc.method, tc.path, p.Field, tc.field)
		}
		if strings.Contains(p.Detail, "secret") {
			t.Errorf("%s %s: internal error leaked to the client: %q", tc.method, tc.path, p.Detail)
		}
	}

	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("POST", "/echo", strings.NewReader("hi")))
	if rec.Code != 200 || rec.Body.String() != "hi" {
		t.Errorf("a good request: %d %q", rec.Code, rec.Body)
	}
	// Requests no route matched are counted under one label, not the
	// catch-all's pattern.
	for route, want := range map[string]float64{"unmatched": 3, "POST /echo": 3, "/": 0} {
		got := 0.0
		for _, code := range []string{"200", "400", "404", "405", "413"} {
			var m dto.Metric
			if err := s.requests.WithLabelValues(route, code).Write(&m); err != nil {
				t.Fatal(err)
			}
			got += m.GetCounter().GetValue()
		}
		if got != want {
			t.Errorf("requests counted for route %q: %v, want %v", route, got, want)
		}
	}
}

func TestAdminEndpointsNeedTheToken(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) error { w.WriteHeader(204); return nil }
	disabled := newTestServer(Defaults())
	disabled.HandleAdmin("POST /admin/x", ok)
	cfg := Defaults()
	cfg.AdminToken = "0123456789abcdef-token"
	enabled := newTestServer(cfg)
	enabled.HandleAdmin("POST /admin/x", ok)

	cases := []struct {
		name   string
		s      *Server
		header string
		status int
	}{
		{"no token configured", disabled, "Bearer anything", 403},
		{"missing header", enabled, "", 401},
		{"wrong token", enabled, "Bearer 0123456789abcdef-wrong", 401},
		{"right token", enabled, "Bearer 0123456789abcdef-token", 204},
	}
	for _, tc := range cases {
		req := httptest.NewRequest("POST", "/admin/x", nil)
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		rec := httptest.NewRecorder()
		tc.s.ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, rec.Code, tc.status)
		}
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	cases := map[string]func(*Config){
		"addr":             func(c *Config) { c.Addr = "localhost" },
		"max-body-bytes":   func(c *Config) { c.MaxBodyBytes = 10 },
		"write-timeout":    func(c *Config) { c.WriteTimeout = 0 },
		"admin-token":      func(c *Config) { c.AdminToken = "short" },
		"shutdown-timeout": func(c *Config) { c.ShutdownTimeout = -1 },
	}
	for field, edit := range cases {
		cfg := Defaults()
		edit(&cfg)
		if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), field+":") {
			t.Errorf("%s: Validate() = %v, want an error naming the field", field, err)
		}
	}
	d := Defaults()
	if err := d.Validate(); err != nil || !d.IsLoopback() {
		t.Errorf("defaults must be valid and loopback: %v", err)
	}
}

// A route takes the query parameters it declared at registration, each with
// a value: an undeclared parameter, or one given empty ("a=" or a bare "a"),
// is a 400 problem naming it before the handler runs, on every route, the
// admin ones and /metrics included.
func TestRoutesTakeOnlyTheirDeclaredParametersWithValues(t *testing.T) {
	cfg := Defaults()
	cfg.AdminToken = "a-token-of-16-chars"
	s := newTestServer(cfg)
	ran := 0
	ok := func(w http.ResponseWriter, r *http.Request) error { ran++; return nil }
	s.Handle("GET /none", ok)
	s.Handle("GET /some", ok, Params("limit", "user-id"))
	s.HandleAdmin("GET /admin", ok, Params("records"))
	cases := []struct {
		target, field string // field "": served
		allowed       []string
	}{
		{"/none", "", nil},
		{"/none?x=1", "x", nil},
		{"/none?x", "x", nil},
		{"/none?x=", "x", nil},
		{"/metrics?x", "x", nil},
		{"/metrics?name%5B%5D=a", "name[]", nil},
		{"/some?limit=5&user-id=2", "", nil},
		{"/some?limit=5&&user-id=2", "", nil}, // an empty pair is no parameter
		{"/some?limit=&user-id=2", "limit", nil},
		{"/some?user-id=2&limit", "limit", nil},
		{"/some?user%2Did=", "user-id", nil},
		{"/some?limit=5&colour=red", "colour", []string{"limit", "user-id"}},
		{"/some?limit=%20", "", nil}, // a value; the handler judges it
		{"/admin?records=5", "", nil},
		{"/admin?records=", "records", nil},
		{"/admin?x=1", "x", []string{"records"}},
	}
	for _, tc := range cases {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", tc.target, nil)
		req.Header.Set("Authorization", "Bearer "+cfg.AdminToken)
		before := ran
		s.ServeHTTP(rec, req)
		if tc.field == "" {
			if rec.Code != http.StatusOK || ran != before+1 && !strings.HasPrefix(tc.target, "/metrics") {
				t.Errorf("%s: status %d, handler ran %d times; want it served: %s", tc.target, rec.Code, ran-before, rec.Body)
			}
			continue
		}
		if rec.Code != http.StatusBadRequest || ran != before {
			t.Errorf("%s: status %d, handler ran %d times; want a 400 before the handler: %s", tc.target, rec.Code, ran-before, rec.Body)
			continue
		}
		p := decodeProblem(t, rec)
		if p.Field != tc.field || (tc.allowed != nil && strings.Join(p.Allowed, ",") != strings.Join(tc.allowed, ",")) {
			t.Errorf("%s: field %q allowed %q, want %q %q (%s)", tc.target, p.Field, p.Allowed, tc.field, tc.allowed, p.Detail)
		}
	}
	// Without the token the answer is 401, whatever the query.
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/admin?x=1", nil))
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("/admin?x=1 without the token: status %d, want 401", rec.Code)
	}
	if got := s.QueryParams(); strings.Join(got["GET /some"], ",") != "limit,user-id" || len(got["GET /none"]) != 0 || len(got["GET /metrics"]) != 0 {
		t.Errorf("QueryParams() = %v", got)
	}
}
