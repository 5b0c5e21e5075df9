package reindex

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baedal/baedal/api"
)

// TestAdminRoutes checks the admin token and the problem bodies of the
// reindex endpoints against the real Redis (unknown job) and the validation
// of a start request (no job is started).
func TestAdminRoutes(t *testing.T) {
	e := newTestEnv(t, "")
	e.cleanup(t)
	o := e.orchestrator(t, nil)
	cfg := api.Defaults()
	cfg.AdminToken = "s3cret-token-for-tests"
	srv := api.New(cfg, nil, prometheus.NewRegistry())
	RegisterRoutes(context.Background(), srv, o)
	do := func(method, path, token, body string) (int, api.Problem) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		var p api.Problem
		_ = json.Unmarshal(rec.Body.Bytes(), &p)
		return rec.Code, p
	}
	if code, _ := do(http.MethodGet, "/admin/reindex", "", ""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	if code, _ := do(http.MethodGet, "/admin/reindex", "wrong", ""); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d, want 401", code)
	}
	alias := e.cfg.Layout.Alias("shops_nested")
	code, p := do(http.MethodPost, "/admin/reindex", cfg.AdminToken, `{"alias":"`+alias+`","slices":"lots"}`)
	if code != http.StatusBadRequest || p.Field != "slices" || len(p.Allowed) == 0 || p.Allowed[0] != "auto or 1..64" {
		t.Errorf("bad slices: %d %+v", code, p)
	}
	code, p = do(http.MethodPost, "/admin/reindex", cfg.AdminToken, `{"alias":"nope"}`)
	if code != http.StatusBadRequest || p.Field != "alias" || !strings.Contains(p.Allowed[0], alias) {
		t.Errorf("bad alias: %d %+v", code, p)
	}
	if code, p = do(http.MethodGet, "/admin/reindex/missing_v9", cfg.AdminToken, ""); code != http.StatusNotFound {
		t.Errorf("unknown job: %d %+v", code, p)
	}
	if code, p = do(http.MethodPost, "/admin/reindex/missing_v9/pause", cfg.AdminToken, ""); code != http.StatusNotFound {
		t.Errorf("pause unknown job: %d %+v", code, p)
	}
	// The action is the request's own form: a 400 before the job is
	// looked up, as the document's enum says.
	if code, p = do(http.MethodPost, "/admin/reindex/missing_v9/explode", cfg.AdminToken, ""); code != http.StatusBadRequest || p.Field != "action" || !slices.Contains(p.Allowed, "pause") {
		t.Errorf("unknown action on an unknown job: %d %+v, want a 400 naming action", code, p)
	}
	if code, _ := do(http.MethodGet, "/admin/reindex", cfg.AdminToken, ""); code != http.StatusOK {
		t.Errorf("list: %d", code)
	}
}
