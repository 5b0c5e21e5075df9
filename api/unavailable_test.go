package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// backendErr is a client error that says which backend it is about.
type backendErr struct{ name string }

func (e backendErr) Error() string              { return "client: secret internals of " + e.name }
func (e backendErr) UnavailableBackend() string { return e.name }

// TestUnavailableIs503WithRetryAfter: every error that means a backend or a
// layout cannot answer now is a 503 problem with Retry-After naming it and
// no internals; other errors stay 500 and a cancelled request is not
// unavailability.
func TestUnavailableIs503WithRetryAfter(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "secret", Addr: "10.0.0.1"}}
	cases := []struct {
		name       string
		err        error
		status     int
		what       string
		retryAfter string
	}{
		{"typed", Unavailable("layout split", 3*time.Second, errors.New("secret")), 503, "layout split", "3"},
		{"typed wrapped", fmt.Errorf("search: %w", Unavailable("layout nested", 0, nil)), 503, "layout nested", "5"},
		{"backend error", fmt.Errorf("feed: read: %w", backendErr{"redis"}), 503, "redis", "5"},
		{"backend error joined", errors.Join(errors.New("secret"), backendErr{"postgresql"}), 503, "postgresql", "5"},
		{"backend says not unavailable", backendErr{""}, 500, "", ""},
		{"network error", fmt.Errorf("x: %w", refused), 503, "a backend", "5"},
		{"connection refused", fmt.Errorf("x: %w", syscall.ECONNREFUSED), 503, "a backend", "5"},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), 503, "a backend", "5"},
		{"cancelled", fmt.Errorf("x: %w", context.Canceled), 500, "", ""},
		{"bug", errors.New("secret"), 500, "", ""},
		{"problem", NewProblem(http.StatusConflict, "exists"), 409, "", ""},
	}
	s := newTestServer(Defaults())
	for i, tc := range cases {
		path := fmt.Sprintf("/case/%d", i)
		s.Handle("GET "+path, func(w http.ResponseWriter, r *http.Request) error { return tc.err })
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, rec.Code, tc.status, rec.Body)
			continue
		}
		p := decodeProblem(t, rec)
		if p.Unavailable != tc.what {
			t.Errorf("%s: unavailable %q, want %q", tc.name, p.Unavailable, tc.what)
		}
		if got := rec.Header().Get("Retry-After"); got != tc.retryAfter {
			t.Errorf("%s: Retry-After %q, want %q", tc.name, got, tc.retryAfter)
		}
		if strings.Contains(rec.Body.String(), "secret") {
			t.Errorf("%s: internals leaked: %s", tc.name, rec.Body)
		}
		if tc.status == 503 && !strings.Contains(p.Detail, tc.what+" is unavailable") {
			t.Errorf("%s: detail %q does not name %s", tc.name, p.Detail, tc.what)
		}
	}
}
