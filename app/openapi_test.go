package app

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baedal/baedal/api/openapitest"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/eventlog"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/linkstore"
	"github.com/baedal/baedal/localstack"
	"github.com/baedal/baedal/query"
)

// loadSpec loads api/openapi.json, failing the test if it is invalid.
func loadSpec(t *testing.T) *openapitest.Spec {
	t.Helper()
	spec, err := openapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// validatingClient is an HTTP client whose every exchange must match
// api/openapi.json: the response always, the request when it was served
// (a status below 400). Tests that talk to the server for other reasons
// use it, so their traffic checks the document too.
func validatingClient(t *testing.T) *http.Client {
	spec := loadSpec(t)
	return &http.Client{Timeout: 30 * time.Second, Transport: &openapitest.Transport{Spec: spec, Check: func(x openapitest.Exchange, reqErr, respErr error) {
		name := x.Request.Method + " " + x.Request.URL.RequestURI()
		if respErr != nil {
			t.Errorf("%s: the %d response does not match api/openapi.json: %v\nbody: %.300s", name, x.Response.StatusCode, respErr, x.ResponseBody)
		}
		if reqErr != nil && x.Response.StatusCode < 400 {
			t.Errorf("%s: served (%d), but the request does not match api/openapi.json: %v", name, x.Response.StatusCode, reqErr)
		}
	}}}
}

// fullServerConfig is the whole server against the test stack, in a
// namespace of its own, with an admin token.
func fullServerConfig(t *testing.T, st *localstack.State) Config {
	ns := stacktest.Namespace(t)
	cfg := Defaults()
	cfg.API.Addr = "127.0.0.1:0"
	cfg.API.AdminToken = "openapi-test-admin-token"
	cfg.Backends.OpenSearch.URLs = st.OpenSearchURLs
	cfg.Backends.Redis.Addr = st.RedisAddr
	cfg.Backends.Postgres.URL = st.PostgresURL
	cfg.Indexer.Layout.Prefix = ns + "_"
	cfg.Indexer.Log.Prefix = ns + ":"
	cfg.Feed.KeyPrefix = ns + ":feed:"
	cfg.Reindex.StatePrefix = ns + ":reindex:"
	cfg.Links.New.Namespace = ns + ":links:"
	cfg.Links.Old.Namespace = ns + ":oldlinks:"
	return cfg
}

// TestOpenAPIDocumentsEveryRoute fails for each route the full server
// registers without an operation in api/openapi.json, naming it, and for
// each operation whose route the server does not register. Whoever adds a
// route adds its operation (see openapitest.GoPatternExtension for routes
// whose OpenAPI path differs from the pattern).
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	st := stacktest.Require(t)
	spec := loadSpec(t)
	cfg := fullServerConfig(t, st)
	cfg.Workers = false
	var routes []string
	cfg.onRoutes = func(r []string) { routes = r }
	serve(t, cfg)
	if len(routes) == 0 {
		t.Fatal("the server registered no routes")
	}
	for _, err := range spec.CheckRoutes(routes) {
		t.Error(err)
	}
	for _, err := range spec.CheckStatuses() {
		t.Error(err)
	}
}

// The document's enums are the code's: a new sort, layout, category, link
// mode or dead-letter kind must be added to api/openapi.json too.
func TestOpenAPIEnumsAreTheCodes(t *testing.T) {
	spec := loadSpec(t)
	schemas := spec.Doc.Components.Schemas
	enum := func(name string) []string {
		s := schemas[name]
		if s == nil || s.Value == nil {
			t.Fatalf("api/openapi.json has no schema %s", name)
		}
		var out []string
		for _, v := range s.Value.Enum {
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	var modes []string
	for _, m := range linkstore.Modes() {
		modes = append(modes, string(m))
	}
	deadLetter := schemas["DeadLetter"].Value.Properties["kind"].Value
	var kinds []string
	for _, v := range deadLetter.Enum {
		kinds = append(kinds, fmt.Sprint(v))
	}
	for _, c := range []struct {
		what      string
		doc, code []string
	}{
		{"components.schemas.Sort (query.Sorts)", enum("Sort"), query.Sorts()},
		{"components.schemas.Layout (layout.KindNames)", enum("Layout"), layout.KindNames()},
		{"components.schemas.Category (catalog.Categories)", enum("Category"), catalog.Categories()},
		{"components.schemas.LinkMode (linkstore.Modes)", enum("LinkMode"), modes},
		{"components.schemas.DeadLetter.kind (eventlog.Reason*)", kinds, []string{
			eventlog.ReasonShopNotFound, eventlog.ReasonIncompleteShop, eventlog.ReasonIncompleteMenu,
			eventlog.ReasonInvalidEvent, eventlog.ReasonMaxAttempts, eventlog.ReasonOpenSearchRefused, eventlog.ReasonOther}},
	} {
		doc, code := slices.Sorted(slices.Values(c.doc)), slices.Sorted(slices.Values(c.code))
		if !slices.Equal(doc, code) {
			t.Errorf("%s: the document has %q, the code %q", c.what, doc, code)
		}
	}
	// The search parameters are those query.ParseRequest knows (its
	// unknown-parameter error lists them), and layout.
	var params []string
	for _, p := range spec.Doc.Paths.Find("/v1/search").Get.Parameters {
		params = append(params, p.Value.Name)
	}
	_, err := query.ParseRequest(url.Values{"no-such-parameter": {"1"}})
	var fe *query.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("query.ParseRequest took an unknown parameter: %v", err)
	}
	want := append(slices.Clone(fe.Allowed), "layout")
	slices.Sort(params)
	slices.Sort(want)
	want = slices.Compact(want)
	if !slices.Equal(params, want) {
		t.Errorf("GET /v1/search: the document declares %q, the server takes %q", params, want)
	}
}

// apiCase is one request of TestOpenAPIRoundTripEveryRoute and what it
// must get.
type apiCase struct {
	route                string // the route pattern it exercises
	method, target, body string
	header               map[string]string
	noToken              bool  // send no Authorization header
	status               []int // the statuses it may get (usually one)
	// specRejects: the document itself refuses the request (a parameter
	// out of its schema, an unknown field, no token). A 4xx the document
	// cannot foresee (a rule across fields, an unknown id) has it false.
	specRejects bool
}

// openAPIClient sends requests to the server through the validating
// transport and checks each exchange: the response always matches the
// document (status declared, headers, body: problem bodies included), and
// the request matches it unless the case says the document refuses it.
type openAPIClient struct {
	t      *testing.T
	base   string
	token  string
	httpc  *http.Client
	mu     sync.Mutex
	seen   map[string][]int // route → statuses got
	reqErr error
	resp   error
}

func newOpenAPIClient(t *testing.T, spec *openapitest.Spec, base, token string) *openAPIClient {
	c := &openAPIClient{t: t, base: base, token: token, seen: map[string][]int{}}
	c.httpc = &http.Client{
		Transport: &openapitest.Transport{Spec: spec, Check: func(_ openapitest.Exchange, reqErr, respErr error) {
			c.reqErr, c.resp = reqErr, respErr
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       30 * time.Second,
	}
	return c
}

// do sends c and returns the response body; mismatches fail the test.
func (c *openAPIClient) do(tc apiCase) []byte {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	req, err := http.NewRequest(tc.method, c.base+tc.target, strings.NewReader(tc.body))
	if err != nil {
		c.t.Fatalf("%s %s: %v", tc.method, tc.target, err)
	}
	if tc.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if !tc.noToken {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range tc.header {
		req.Header.Set(k, v)
	}
	c.reqErr, c.resp = nil, nil
	resp, err := c.httpc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", tc.method, tc.target, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	name := fmt.Sprintf("%s (%s %.90s body %.60q)", tc.route, tc.method, tc.target, tc.body)
	if !slices.Contains(tc.status, resp.StatusCode) {
		c.t.Errorf("%s: status %d, want one of %v: %.300s", name, resp.StatusCode, tc.status, body)
	}
	if c.resp != nil {
		c.t.Errorf("%s: the %d response does not match api/openapi.json: %v\nbody: %.300s", name, resp.StatusCode, c.resp, body)
	}
	switch {
	case tc.specRejects && c.reqErr == nil:
		c.t.Errorf("%s: api/openapi.json accepts this request, which the server refuses (%d %.200s): the document should state the rule", name, resp.StatusCode, body)
	case !tc.specRejects && c.reqErr != nil:
		c.t.Errorf("%s: the request does not match api/openapi.json: %v", name, c.reqErr)
	}
	if resp.StatusCode >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" && tc.route != "GET /healthz" && tc.route != "GET /readyz" {
		c.t.Errorf("%s: a %d with Content-Type %q, not a problem", name, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	c.seen[tc.route] = append(c.seen[tc.route], resp.StatusCode)
	return body
}

// decode sends tc and decodes its JSON answer into v.
func (c *openAPIClient) decode(tc apiCase, v any) {
	c.t.Helper()
	body := c.do(tc)
	if err := json.Unmarshal(body, v); err != nil {
		c.t.Fatalf("%s %s: %v: %.300s", tc.method, tc.target, err, body)
	}
}

// poll repeats tc until done accepts its body, for up to a minute.
func (c *openAPIClient) poll(tc apiCase, what string, done func(body []byte) bool) {
	c.t.Helper()
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		if done(c.do(tc)) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: not within 90s", what)
		}
	}
}

// TestOpenAPIRoundTripEveryRoute drives every route of the full server
// (workers included, so events are indexed and dead-lettered) with at least
// one request it serves and one it refuses, through the validating
// transport: each request and each response, problem bodies included, must
// match api/openapi.json. A route without both kinds of case fails the
// test, naming it.
func TestOpenAPIRoundTripEveryRoute(t *testing.T) {
	st := stacktest.Require(t)
	testOpenAPIRoundTripEveryRoute(t, fullServerConfig(t, st))
}

// TestOpenAPIRoundTripEveryRouteOnARedisCluster is the round trip with every
// subsystem on the test run's Redis Cluster (--redis-cluster-mode): the event log
// and its dead letters, the indexer, the feed, the link store and the
// reindex state, through the cluster client; the feed's and link store's
// reads through the shards' replicas (--redis-cluster-read-from-replicas).
func TestOpenAPIRoundTripEveryRouteOnARedisCluster(t *testing.T) {
	st := stacktest.Require(t)
	cfg := fullServerConfig(t, st)
	cfg.Backends.Redis.Addr = strings.Join(stacktest.RedisClusterAddrs(t), ",")
	cfg.Backends.Redis.Cluster = true
	cfg.Backends.Redis.ClusterReadFromReplicas = true
	testOpenAPIRoundTripEveryRoute(t, cfg)
}

func testOpenAPIRoundTripEveryRoute(t *testing.T, cfg Config) {
	spec := loadSpec(t)
	cfg.API.MaxBodyBytes = 64 << 10
	var routes []string
	cfg.onRoutes = func(r []string) { routes = r }
	addr := serve(t, cfg)
	c := newOpenAPIClient(t, spec, "http://"+addr, cfg.API.AdminToken)
	ok := []int{200}

	// The routes that need nothing stored.
	for _, r := range []string{"/livez", "/healthz", "/metrics", "/openapi.json", "/console/api/meta", "/console/api/ops",
		"/console/", "/console/app.js", "/console/console.css", "/console/favicon.svg", "/console/views/search.js", "/console/views/replicas.js", "/console/views/links.js", "/console/views/feed.js", "/console/views/reindex.js"} {
		route := "GET " + r
		if strings.HasPrefix(r, "/console/") && !strings.HasPrefix(r, "/console/api/") {
			route = "GET /console/"
		}
		c.do(apiCase{route: route, method: "GET", target: r, status: ok})
		c.do(apiCase{route: route, method: "GET", target: r + "?x=1&x=2", status: []int{400}, specRejects: true})
		c.do(apiCase{route: route, method: "GET", target: r + "?x=1", status: []int{400}, specRejects: true})
	}
	c.do(apiCase{route: "GET /openapi.json", method: "GET", target: "/openapi.json?pretty=1", status: []int{400}, specRejects: true})
	// Ready once the layouts' indices exist (created in the background).
	c.poll(apiCase{route: "GET /readyz", method: "GET", target: "/readyz", status: []int{200, 503}}, "/readyz ready", func(b []byte) bool {
		var r struct{ Status string }
		return json.Unmarshal(b, &r) == nil && r.Status == "ready"
	})
	c.do(apiCase{route: "GET /readyz", method: "GET", target: "/readyz?verbose=1", status: []int{400}, specRejects: true})
	c.do(apiCase{route: "GET /console/", method: "GET", target: "/console/no-such-file.txt", status: []int{404}})
	etag := func() string {
		resp, err := http.Get("http://" + addr + "/console/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("ETag")
	}()
	c.do(apiCase{route: "GET /console/", method: "GET", target: "/console/", header: map[string]string{"If-None-Match": etag}, status: []int{304}})
	c.do(apiCase{route: "GET /{$}", method: "GET", target: "/", status: []int{302}})
	c.do(apiCase{route: "GET /{$}", method: "GET", target: "/?a=1&a=2", status: []int{400}, specRejects: true})

	// S1: an event in, the shop found; a menu of no shop, dead-lettered.
	shopID := int64(4200 + time.Now().UnixNano()%1000)
	shop := catalog.Shop{ID: shopID, Name: "오픈API 피자", Category: "피자", Location: catalog.GeoPoint{Lat: 37.4979, Lon: 127.0276},
		DeliveryRadiusKm: 3, Open: true, DeliveryMinutes: 30, DeliveryFee: 3000, MinOrder: 15000, Rating: 4.5, ReviewCount: 10,
		District: "강남구", Address: "서울 강남구 테헤란로 1", Phone: "02-000-0000", Tags: []string{"피자"}, OpenedOn: "2020-01-01"}
	ev, err := json.Marshal(catalog.Event{Type: catalog.EntityShop, ID: shopID, Version: 1, Op: catalog.OpUpsert, Shop: catalog.ShopFieldsFrom(shop),
		Menus: []catalog.Menu{{ID: catalog.MenuID(shopID, 1), ShopID: shopID, Name: "페퍼로니 피자", Description: "치즈와 페퍼로니", Price: 18000, CookMinutes: 15, Popular: true}}})
	if err != nil {
		t.Fatal(err)
	}
	orphan := fmt.Sprintf(`{"type":"menu","id":%d,"shop_id":%d,"version":1,"op":"upsert","fields":{"price":1000}}`, catalog.MenuID(shopID+1, 1), shopID+1)
	c.do(apiCase{route: "POST /v1/events", method: "POST", target: "/v1/events", body: "[" + string(ev) + "," + orphan + "]", status: []int{202}})
	c.do(apiCase{route: "POST /v1/events", method: "POST", target: "/v1/events", body: `[{"type":"shop","id":1,"version":0,"op":"delete"}]`, status: []int{400}, specRejects: true})
	c.do(apiCase{route: "POST /v1/events", method: "POST", target: "/v1/events", body: `{"type":"shop","id":1,"version":1,"op":"delete","colour":1}`, status: []int{400}, specRejects: true})
	c.do(apiCase{route: "POST /v1/events", method: "POST", target: "/v1/events", body: `{"type":"shop","id":1,"version":1,"op":"upsert","fields":{"price":1}}`, status: []int{400}, specRejects: true})
	c.do(apiCase{route: "POST /v1/events", method: "POST", target: "/v1/events", body: `{"type":"menu","id":1001,"shop_id":1,"version":1,"op":"upsert","fields":{"open":true}}`, status: []int{400}, specRejects: true})
	c.do(apiCase{route: "POST /v1/events", method: "POST", target: "/v1/events", body: `{"type":"shop","id":1,"version":1,"op":"upsert","fields":{"category":"스시"}}`, status: []int{400}, specRejects: true})
	c.do(apiCase{route: "POST /v1/events", method: "POST", target: "/v1/events", body: `{"referrer":"` + strings.Repeat("a", 70<<10) + `"}`, status: []int{413}, specRejects: true})
	c.do(apiCase{route: "POST /v1/events", method: "POST", target: "/v1/events", body: orphan, header: map[string]string{"Content-Type": "application/xml"}, status: []int{415}, specRejects: true})

	search := "/v1/search?q=" + url.QueryEscape("페퍼로니") + "&lat=37.4979&lon=127.0276&sort=eta&explain=true"
	// Until the indices exist (created in the background) a search is a
	// 503: the layout is unavailable.
	c.poll(apiCase{route: "GET /v1/search", method: "GET", target: search, status: []int{200, 503}}, "the indexed shop found by search", func(b []byte) bool {
		var page struct{ Total int }
		return json.Unmarshal(b, &page) == nil && page.Total > 0
	})
	ndjson := fmt.Sprintf("{\"type\":\"shop\",\"id\":%d,\"version\":2,\"op\":\"upsert\",\"fields\":{\"delivery_minutes\":25}}\n{\"type\":\"shop\",\"id\":%d,\"version\":3,\"op\":\"upsert\",\"fields\":{\"open\":true}}\n", shopID, shopID)
	c.do(apiCase{route: "POST /v1/events", method: "POST", target: "/v1/events", body: ndjson, header: map[string]string{"Content-Type": "application/x-ndjson"}, status: []int{202}})
	c.do(apiCase{route: "GET /v1/search", method: "GET", target: search + "&layout=nested", status: ok})
	c.do(apiCase{route: "GET /v1/search", method: "GET", target: search + "&layout=hot", status: []int{200, 503}}) // 503 without the plugin
	c.do(apiCase{route: "GET /v1/search", method: "GET", target: "/v1/search?layout=zzz", status: []int{400}, specRejects: true})
	c.do(apiCase{route: "GET /v1/search", method: "GET", target: "/v1/search?sort=cheapest", status: []int{400}, specRejects: true})
	c.do(apiCase{route: "GET /v1/search", method: "GET", target: "/v1/search?size=101", status: []int{400}, specRejects: true})
	c.do(apiCase{route: "GET /v1/search", method: "GET", target: "/v1/search?colour=red", status: []int{400}, specRejects: true})
	c.do(apiCase{route: "GET /v1/search", method: "GET", target: "/v1/search?lat=37.5", status: []int{400}}) // lat without lon: a rule across parameters
	c.do(apiCase{route: "GET /v1/search", method: "GET", target: "/v1/search?q=" + strings.Repeat("a", 200<<10), status: []int{431}, specRejects: true})

	var deadLetters struct {
		DeadLetters []struct{ ID string } `json:"dead_letters"`
	}
	c.poll(apiCase{route: "GET /v1/admin/dead-letters", method: "GET", target: "/v1/admin/dead-letters?limit=10", status: ok}, "the orphan menu dead-lettered", func(b []byte) bool {
		return json.Unmarshal(b, &deadLetters) == nil && len(deadLetters.DeadLetters) > 0
	})
	c.do(apiCase{route: "GET /v1/admin/dead-letters", method: "GET", target: "/v1/admin/dead-letters", noToken: true, status: []int{401}, specRejects: true})
	c.do(apiCase{route: "GET /v1/admin/dead-letters", method: "GET", target: "/v1/admin/dead-letters?limit=0", status: []int{400}, specRejects: true})
	c.do(apiCase{route: "GET /v1/admin/dead-letters", method: "GET", target: "/v1/admin/dead-letters?after=zzz", status: []int{400}, specRejects: true})
	dl := deadLetters.DeadLetters[0].ID
	c.do(apiCase{route: "POST /v1/admin/dead-letters/{id}/replay", method: "POST", target: "/v1/admin/dead-letters/" + dl + "/replay", status: ok})
	c.do(apiCase{route: "POST /v1/admin/dead-letters/{id}/replay", method: "POST", target: "/v1/admin/dead-letters/1-0/replay", status: []int{404}})
	c.do(apiCase{route: "POST /v1/admin/dead-letters/{id}/replay", method: "POST", target: "/v1/admin/dead-letters/01-0/replay", status: []int{400}, specRejects: true})
	c.poll(apiCase{route: "GET /v1/admin/dead-letters", method: "GET", target: "/v1/admin/dead-letters", status: ok}, "the replayed menu dead-lettered again", func(b []byte) bool {
		return json.Unmarshal(b, &deadLetters) == nil && len(deadLetters.DeadLetters) > 0 && deadLetters.DeadLetters[0].ID != dl
	})
	c.do(apiCase{route: "DELETE /v1/admin/dead-letters/{id}", method: "DELETE", target: "/v1/admin/dead-letters/" + deadLetters.DeadLetters[0].ID, status: []int{204}})
	c.do(apiCase{route: "DELETE /v1/admin/dead-letters/{id}", method: "DELETE", target: "/v1/admin/dead-letters/" + deadLetters.DeadLetters[0].ID, status: []int{404}})
	c.do(apiCase{route: "DELETE /v1/admin/dead-letters/{id}", method: "DELETE", target: "/v1/admin/dead-letters/x", status: []int{400}, specRejects: true})

	// S2: a live reindex of the menus index (the search above is done).
	aliases := cfg.Indexer.Layout.Aliases(layout.Split)
	var job struct{ ID string }
	c.decode(apiCase{route: "POST /admin/reindex", method: "POST", target: "/admin/reindex", body: fmt.Sprintf(`{"alias":%q,"requests_per_second":1000}`, aliases[len(aliases)-1]), status: []int{202}}, &job)
	c.do(apiCase{route: "POST /admin/reindex", method: "POST", target: "/admin/reindex", body: `{"colour":1}`, status: []int{400}, specRejects: true})
	c.do(apiCase{route: "POST /admin/reindex", method: "POST", target: "/admin/reindex", body: `{"alias":"no-such-alias"}`, status: []int{400}})
	c.do(apiCase{route: "GET /admin/reindex", method: "GET", target: "/admin/reindex", status: ok})
	c.do(apiCase{route: "GET /admin/reindex", method: "GET", target: "/admin/reindex", noToken: true, status: []int{401}, specRejects: true})
	c.do(apiCase{route: "GET /admin/reindex/{id}", method: "GET", target: "/admin/reindex/" + job.ID, status: ok})
	c.do(apiCase{route: "GET /admin/reindex/{id}", method: "GET", target: "/admin/reindex/nojob", status: []int{404}})
	var step string
	c.poll(apiCase{route: "GET /admin/reindex/{id}", method: "GET", target: "/admin/reindex/" + job.ID, status: ok}, "the reindex job done", func(b []byte) bool {
		var st struct{ Step string }
		_ = json.Unmarshal(b, &st)
		step = st.Step
		return step == "done" || step == "failed"
	})
	if step == "done" {
		c.do(apiCase{route: "POST /admin/reindex/{id}/{action}", method: "POST", target: "/admin/reindex/" + job.ID + "/cleanup", status: ok})
	} else {
		t.Errorf("the reindex job failed; see GET /admin/reindex/%s", job.ID)
	}
	// No copy runs any more: pause and rethrottle are in the wrong step.
	c.do(apiCase{route: "POST /admin/reindex/{id}/{action}", method: "POST", target: "/admin/reindex/" + job.ID + "/pause", status: []int{409}})
	c.do(apiCase{route: "POST /admin/reindex/{id}/{action}", method: "POST", target: "/admin/reindex/" + job.ID + "/rethrottle", body: `{"requests_per_second":500}`, status: []int{409}})
	c.do(apiCase{route: "POST /admin/reindex/{id}/{action}", method: "POST", target: "/admin/reindex/" + job.ID + "/explode", status: []int{400}, specRejects: true})
	c.do(apiCase{route: "POST /admin/reindex/{id}/{action}", method: "POST", target: "/admin/reindex/" + job.ID + "/rethrottle", body: `{"requests_per_second":"x"}`, status: []int{400}, specRejects: true})
	c.do(apiCase{route: "POST /admin/reindex/{id}/{action}", method: "POST", target: "/admin/reindex/nojob/pause", status: []int{404}})

	// S3: the admin views (one OpenSearch URL, no Redis replicas here).
	for _, r := range []string{"/v1/admin/replicas", "/v1/admin/opensearch-endpoints"} {
		c.do(apiCase{route: "GET " + r, method: "GET", target: r, status: ok})
		c.do(apiCase{route: "GET " + r, method: "GET", target: r, noToken: true, status: []int{401}, specRejects: true})
		c.do(apiCase{route: "GET " + r, method: "GET", target: r, header: map[string]string{"Authorization": "Bearer wrong-token-of-enough-length"}, status: []int{401}})
		c.do(apiCase{route: "GET " + r, method: "GET", target: r + "?limit=1", status: []int{400}, specRejects: true})
	}

	// S5: the follow feed.
	suffix := strconv.FormatInt(time.Now().UnixNano()%1_000_000_000, 10)
	var alice, bob struct{ ID int64 }
	c.decode(apiCase{route: "POST /v1/users", method: "POST", target: "/v1/users", body: `{"username":"alice` + suffix + `","profilePic":"https://img.example/a.png"}`, status: []int{201}}, &alice)
	c.decode(apiCase{route: "POST /v1/users", method: "POST", target: "/v1/users", body: `{"username":"bob` + suffix + `"}`, status: []int{201}}, &bob)
	c.do(apiCase{route: "POST /v1/users", method: "POST", target: "/v1/users", body: `{"username":"bob` + suffix + `"}`, status: []int{409}})
	c.do(apiCase{route: "POST /v1/users", method: "POST", target: "/v1/users", body: `{"username":5}`, status: []int{400}, specRejects: true})
	c.do(apiCase{route: "POST /v1/users", method: "POST", target: "/v1/users", body: `{"username":"x","admin":true}`, status: []int{400}, specRejects: true})
	a, b := strconv.FormatInt(alice.ID, 10), strconv.FormatInt(bob.ID, 10)
	c.do(apiCase{route: "GET /v1/users/{id}", method: "GET", target: "/v1/users/" + a, status: ok})
	c.do(apiCase{route: "GET /v1/users/{id}", method: "GET", target: "/v1/users/abc", status: []int{400}, specRejects: true})
	c.do(apiCase{route: "GET /v1/users/{id}", method: "GET", target: "/v1/users/0", status: []int{400}, specRejects: true})
	c.do(apiCase{route: "GET /v1/users/{id}", method: "GET", target: "/v1/users/999999999999", status: []int{404}})
	c.do(apiCase{route: "PUT /v1/users/{id}/follows/{target}", method: "PUT", target: "/v1/users/" + b + "/follows/" + a, status: []int{204}})
	c.do(apiCase{route: "PUT /v1/users/{id}/follows/{target}", method: "PUT", target: "/v1/users/" + a + "/follows/" + a, status: []int{400}}) // self-follow
	c.do(apiCase{route: "PUT /v1/users/{id}/follows/{target}", method: "PUT", target: "/v1/users/" + a + "/follows/999999999999", status: []int{404}})
	c.do(apiCase{route: "PUT /v1/users/{id}/follows/{target}", method: "PUT", target: "/v1/users/" + a + "/follows/x", status: []int{400}, specRejects: true})
	var post struct{ ID int64 }
	c.decode(apiCase{route: "POST /v1/posts", method: "POST", target: "/v1/posts", body: `{"authorId":` + a + `,"text":"첫 글"}`, status: []int{201}}, &post)
	c.do(apiCase{route: "POST /v1/posts", method: "POST", target: "/v1/posts", body: `{"authorId":"` + a + `","text":"x"}`, status: []int{400}, specRejects: true})
	c.do(apiCase{route: "POST /v1/posts", method: "POST", target: "/v1/posts", body: `{"authorId":999999999999,"text":"x"}`, status: []int{404}})
	p := strconv.FormatInt(post.ID, 10)
	c.do(apiCase{route: "GET /v1/posts/{id}", method: "GET", target: "/v1/posts/" + p, status: ok})
	c.do(apiCase{route: "GET /v1/posts/{id}", method: "GET", target: "/v1/posts/0x1", status: []int{400}, specRejects: true})
	c.do(apiCase{route: "GET /v1/posts/{id}", method: "GET", target: "/v1/posts/999999999999", status: []int{404}})
	c.poll(apiCase{route: "GET /v1/users/{id}/feed", method: "GET", target: "/v1/users/" + b + "/feed?limit=10", status: ok}, "alice's post in bob's feed", func(body []byte) bool {
		return strings.Contains(string(body), `"id":`+p)
	})
	c.do(apiCase{route: "GET /v1/users/{id}/feed", method: "GET", target: "/v1/users/" + b + "/feed?limit=0", status: []int{400}, specRejects: true})
	c.do(apiCase{route: "GET /v1/users/{id}/feed", method: "GET", target: "/v1/users/" + b + "/feed?cursor=1", status: []int{400}, specRejects: true})
	c.do(apiCase{route: "GET /v1/users/{id}/feed/strategies", method: "GET", target: "/v1/users/" + b + "/feed/strategies?limit=10", status: ok})
	c.do(apiCase{route: "GET /v1/users/{id}/feed/strategies", method: "GET", target: "/v1/users/" + b + "/feed/strategies?limit=0", status: []int{400}, specRejects: true})
	c.do(apiCase{route: "GET /v1/users/{id}/feed/strategies", method: "GET", target: "/v1/users/999999999999/feed/strategies", status: []int{404}})
	c.do(apiCase{route: "GET /v1/posts/{id}/fanout", method: "GET", target: "/v1/posts/" + p + "/fanout", status: ok})
	c.do(apiCase{route: "GET /v1/posts/{id}/fanout", method: "GET", target: "/v1/posts/0x1/fanout", status: []int{400}, specRejects: true})
	c.do(apiCase{route: "GET /v1/posts/{id}/fanout", method: "GET", target: "/v1/posts/999999999999/fanout", status: []int{404}})
	c.do(apiCase{route: "GET /v1/feed/example", method: "GET", target: "/v1/feed/example", status: ok})
	c.do(apiCase{route: "GET /v1/feed/example", method: "GET", target: "/v1/feed/example?user=1", status: []int{400}, specRejects: true})
	c.do(apiCase{route: "GET /api/v1/feeds", method: "GET", target: "/api/v1/feeds?user-id=" + b + "&limit=5", status: ok})
	c.do(apiCase{route: "GET /api/v1/feeds", method: "GET", target: "/api/v1/feeds", status: []int{400}, specRejects: true})
	c.do(apiCase{route: "GET /api/v1/feeds", method: "GET", target: "/api/v1/feeds?user-id=999999999999", status: []int{404}})
	c.do(apiCase{route: "POST /api/v1/tweets", method: "POST", target: "/api/v1/tweets", body: `{"senderId":` + b + `,"text":"안녕"}`, status: []int{201}})
	c.do(apiCase{route: "POST /api/v1/tweets", method: "POST", target: "/api/v1/tweets", body: `{"senderId":0,"text":"x"}`, status: []int{400}, specRejects: true})
	c.do(apiCase{route: "DELETE /v1/users/{id}/follows/{target}", method: "DELETE", target: "/v1/users/" + b + "/follows/" + a, status: []int{204}})
	c.do(apiCase{route: "DELETE /v1/users/{id}/follows/{target}", method: "DELETE", target: "/v1/users/" + b + "/follows/01", status: []int{400}, specRejects: true}) // "01" is not canonical

	// S4: click records.
	now := time.Now().UTC()
	clickID := newUUID(t)
	click := fmt.Sprintf(`{"click_id":%q,"tracking_link":"https://t.example/c?id=1","campaign":{"id":7,"name":"겨울"},"ad_group":{"id":8,"name":"g"},
		"creative":{"id":9,"name":"banner"},"channel":{"id":1,"name":"search"},"sub_params":{"sub1":"a"},"deep_link_url":"baedal://shop/%d",
		"fallback_url":"https://baedal.example/shop/%d","device":{"ip":"203.0.113.5","user_agent":"Mozilla/5.0","os":"iOS","os_version":"18.1",
		"model":"iPhone16,1","locale":"ko-KR","timezone":"Asia/Seoul","screen_width":1179,"screen_height":2556,"advertising_id":%q,"carrier":"SKT","network":"5g"},
		"clicked_at":%q,"impression_at":%q,"referrer":"https://news.example/","utm":{"source":"news","medium":"cpc","campaign":"winter","term":"피자","content":"a"}}`,
		clickID, shopID, shopID, newUUID(t), now.Format(time.RFC3339Nano), now.Add(-time.Second).Format(time.RFC3339Nano))
	c.do(apiCase{route: "POST /v1/clicks", method: "POST", target: "/v1/clicks", body: click, status: []int{201}})
	c.do(apiCase{route: "POST /v1/clicks", method: "POST", target: "/v1/clicks", body: click, status: []int{409}})
	c.do(apiCase{route: "POST /v1/clicks", method: "POST", target: "/v1/clicks", body: click, header: map[string]string{"Content-Type": "multipart/form-data; boundary=b"}, status: []int{415}, specRejects: true})
	c.do(apiCase{route: "POST /v1/clicks", method: "POST", target: "/v1/clicks", body: `{"clicked_at":"2025-01-01T00:00:00Z"}`, status: []int{400}, specRejects: true})
	c.do(apiCase{route: "POST /v1/clicks", method: "POST", target: "/v1/clicks", body: `{"deep_link_url":"ftp://x","clicked_at":"2025-01-01T00:00:00Z"}`, status: []int{400}, specRejects: true})
	c.do(apiCase{route: "POST /v1/clicks", method: "POST", target: "/v1/clicks", body: `{"referrer":"` + strings.Repeat("a", 20<<10) + `"}`, status: []int{413}, specRejects: true})
	c.do(apiCase{route: "GET /v1/clicks/{id}", method: "GET", target: "/v1/clicks/" + clickID, status: ok})
	c.do(apiCase{route: "GET /v1/clicks/{id}", method: "GET", target: "/v1/clicks/zzz", status: []int{400}, specRejects: true})
	c.do(apiCase{route: "GET /v1/clicks/{id}", method: "GET", target: "/v1/clicks/" + newUUID(t), status: []int{404}})
	c.do(apiCase{route: "POST /v1/clicks/{id}/resolve", method: "POST", target: "/v1/clicks/" + clickID + "/resolve", status: ok})
	c.do(apiCase{route: "POST /v1/clicks/{id}/resolve", method: "POST", target: "/v1/clicks/" + clickID + "/resolve", status: ok}) // already consumed
	c.do(apiCase{route: "POST /v1/clicks/{id}/resolve", method: "POST", target: "/v1/clicks/zzz/resolve", status: []int{400}, specRejects: true})
	var short struct {
		ClickID string `json:"click_id"`
	}
	expires := time.Now().Add(1500 * time.Millisecond).UTC()
	c.decode(apiCase{route: "POST /v1/clicks", method: "POST", target: "/v1/clicks", status: []int{201},
		body: fmt.Sprintf(`{"deep_link_url":"https://baedal.example/x","clicked_at":%q,"expires_at":%q}`, now.Format(time.RFC3339Nano), expires.Format(time.RFC3339Nano))}, &short)
	time.Sleep(time.Until(expires) + 100*time.Millisecond)
	c.do(apiCase{route: "GET /v1/clicks/{id}", method: "GET", target: "/v1/clicks/" + short.ClickID, status: []int{410, 404}})
	c.do(apiCase{route: "POST /v1/clicks/{id}/resolve", method: "POST", target: "/v1/clicks/" + short.ClickID + "/resolve", status: []int{410, 404}})
	c.do(apiCase{route: "GET /v1/admin/links/migration", method: "GET", target: "/v1/admin/links/migration", status: ok})
	c.do(apiCase{route: "GET /v1/admin/links/migration", method: "GET", target: "/v1/admin/links/migration", noToken: true, status: []int{401}, specRejects: true})
	c.do(apiCase{route: "GET /v1/admin/links/memory", method: "GET", target: "/v1/admin/links/memory?records=5", status: ok})
	c.do(apiCase{route: "GET /v1/admin/links/memory", method: "GET", target: "/v1/admin/links/memory?records=0", status: []int{400}, specRejects: true})
	c.do(apiCase{route: "GET /v1/admin/links/memory", method: "GET", target: "/v1/admin/links/memory", noToken: true, status: []int{401}, specRejects: true})
	var migration struct {
		Mode        string   `json:"mode"`
		AllowedNext []string `json:"allowed_next"`
	}
	c.decode(apiCase{route: "PUT /v1/admin/links/migration", method: "PUT", target: "/v1/admin/links/migration", body: `{"mode":"new-only"}`, status: []int{200, 409}}, &migration)
	c.do(apiCase{route: "PUT /v1/admin/links/migration", method: "PUT", target: "/v1/admin/links/migration", body: `{"mode":"sideways"}`, status: []int{400}, specRejects: true})
	c.do(apiCase{route: "PUT /v1/admin/links/migration", method: "PUT", target: "/v1/admin/links/migration", body: `{"mode":"old-only"}`, status: []int{409, 200}})

	if cfg.Backends.Redis.ClusterReadFromReplicas {
		// The feed and click reads above went to the shards' replicas.
		var view struct {
			Shards []struct {
				Primary  string
				Replicas []struct{ Chosen uint64 }
			}
			Replicas []struct{ Chosen uint64 }
		}
		c.decode(apiCase{route: "GET /v1/admin/replicas", method: "GET", target: "/v1/admin/replicas", status: ok}, &view)
		var chosen uint64
		for _, r := range view.Replicas {
			chosen += r.Chosen
		}
		if len(view.Shards) != len(stacktest.RedisClusterAddrs(t))/2 || chosen == 0 {
			t.Errorf("replicas view on the cluster: %d shards, %d replica reads; want one shard per master and the feed's and links' reads on replicas", len(view.Shards), chosen)
		}
	}
	t.Logf("GET /v1/search answered %v (a 503 is the hot layout without its plugin)", c.seen["GET /v1/search"])
	// Every route has a case it serves and a case it refuses.
	for _, r := range routes {
		got := c.seen[r]
		if len(got) == 0 {
			t.Errorf("route %q has no case in TestOpenAPIRoundTripEveryRoute: add a request it serves and one it refuses (4xx)", r)
			continue
		}
		if !slices.ContainsFunc(got, func(s int) bool { return s < 400 }) {
			t.Errorf("route %q: no case it serves (statuses %v)", r, got)
		}
		if !slices.ContainsFunc(got, func(s int) bool { return s >= 400 && s < 500 }) {
			t.Errorf("route %q: no case it refuses with a 4xx (statuses %v)", r, got)
		}
	}
	for r := range c.seen {
		if !slices.Contains(routes, r) {
			t.Errorf("the test has cases for %q, which the server does not register", r)
		}
	}
}

// newUUID returns a random version 4 UUID.
func newUUID(t *testing.T) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
