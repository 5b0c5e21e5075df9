package searcher

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

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
	kinds := testedKinds(t, osc)
	states := generateStates(60, 0)
	for _, k := range kinds {
		if err := idx.EnsureIndices(ctx, osc, k); err != nil {
			t.Fatal(err)
		}
		writeDocs(t, osc, idx, k, states)
	}
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
			if r.Index == "" || r.Step == "" || r.Method != "POST" || !strings.HasSuffix(r.Path, "/_search") {
				t.Errorf("%s: request %d: %+v", k, i, r)
			}
			if r.Path != "/_search" && r.Path != "/"+r.Index+"/_search" {
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
}
