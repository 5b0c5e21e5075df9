package searcher

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/query"
)

// explain=dsl returns every search request sent to OpenSearch, and each one
// runs as shown when sent again (as from Dev Tools); explain=true is as it
// was, without the requests.
func TestExplainDSLReturnsTheRequestsSent(t *testing.T) {
	st := stacktest.Require(t)
	ctx := context.Background()
	osc, idx := openIndex(t, st.OpenSearchURLs)
	kinds := stacktest.Layouts(t, osc)
	states := generateStates(60, 0)
	loadLayouts(t, osc, idx, kinds, states)
	s := newSearcher(osc, idx, Defaults(), kinds)
	params := url.Values{"q": {"치킨"}, "lat": {"37.5"}, "lon": {"127.03"}, "sort": {"eta"}, "max_delivery_fee": {"3000"}, "open_now": {"true"}}
	for _, k := range kinds {
		params.Set("explain", "dsl")
		req, err := query.ParseRequest(params)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := s.Search(ctx, req, k)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		ex := resp.Explain
		if ex == nil || len(ex.Requests) == 0 {
			t.Fatalf("%s: explain=dsl returned no requests: %+v", k, ex)
		}
		sent := 0
		for _, step := range ex.Steps {
			sent += step.Requests
		}
		if len(ex.Requests) != sent {
			t.Errorf("%s: %d requests shown, the steps sent %d", k, len(ex.Requests), sent)
		}
		for i, r := range ex.Requests {
			path, _, _ := strings.Cut(r.Path, "?") // hot adds allow_partial_search_results=false
			if r.Index == "" || r.Step == "" || r.Method != "POST" || !strings.HasSuffix(path, "/_search") {
				t.Errorf("%s: request %d: %+v", k, i, r)
			}
			if path != "/_search" && path != "/"+r.Index+"/_search" {
				t.Errorf("%s: request %d goes to %s, not to its index %s", k, i, r.Path, r.Index)
			}
			head, body, ok := strings.Cut(r.DevTools, "\n")
			if !ok || head != "POST "+r.Path || !json.Valid([]byte(body)) {
				t.Errorf("%s: request %d: dev_tools is not \"POST <path>\" and a JSON body: %q", k, i, r.DevTools)
			}
			// Pasted into Dev Tools, it runs.
			var out searchResponse
			if err := osc.Do(ctx, r.Method, r.Path, []byte(body), &out); err != nil {
				t.Errorf("%s: request %d (%s) does not run again: %v", k, i, r.Step, err)
			}
		}
		// The whole response, as the API encodes it, holds them.
		raw, _ := json.Marshal(resp)
		if !strings.Contains(string(raw), `"requests":[{"step":`) || !strings.Contains(string(raw), `"dev_tools":"POST /`) {
			t.Errorf("%s: the JSON response lacks explain.requests: %.400s", k, raw)
		}

		params.Set("explain", "true")
		req, _ = query.ParseRequest(params)
		resp, err = s.Search(ctx, req, k)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Explain == nil || len(resp.Explain.Steps) == 0 || resp.Explain.Requests != nil {
			t.Errorf("%s: explain=true: %+v, want the plan and steps without requests", k, resp.Explain)
		}
	}

	// Through GET /v1/search: explain.requests in the JSON body, and an
	// unknown explain value is a 400 naming the parameter and dsl.
	srv := api.New(api.Defaults(), nil, prometheus.NewRegistry())
	RegisterRoutes(srv, s)
	params.Set("explain", "dsl")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/search?"+params.Encode(), nil))
	var body struct {
		Explain struct {
			Requests []DSLRequest `json:"requests"`
		} `json:"explain"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); rec.Code != http.StatusOK || err != nil || len(body.Explain.Requests) == 0 || !strings.HasPrefix(body.Explain.Requests[0].DevTools, "POST /") {
		t.Errorf("GET /v1/search explain=dsl: %d %v %.300s", rec.Code, err, rec.Body.String())
	}
	params.Set("explain", "sql")
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/search?"+params.Encode(), nil))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "explain") || !strings.Contains(rec.Body.String(), "dsl") {
		t.Errorf("explain=sql: %d %s, want a 400 naming explain and allowing dsl", rec.Code, rec.Body.String())
	}
}
