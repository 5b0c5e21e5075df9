package app

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/api/openapitest"
	"github.com/baedal/baedal/internal/stacktest"
)

// hostileCase is one hostile request to a route and the problem it must get.
type hostileCase struct {
	target string // path and query; "" = the route's sample target
	body   string
	header map[string]string // request headers besides Authorization
	status int               // the exact status wanted
	field  string            // the problem's field ("" only where no field applies)
}

// hostileRoute is a route's sample target (its path with real ids filled
// in, so that a request that slipped through would change stored data) and
// its own hostile cases; the generic ones (query encodings, NUL and invalid
// UTF-8 bodies, over-size and slow bodies) are added to every route. A route
// that takes a body (its operation in api/openapi.json has a requestBody)
// has a valid sample body too, which the generic cases send as it must not
// be read: with another Content-Type, or compressed.
type hostileRoute struct {
	sample string
	body   string
	cases  []hostileCase
}

// TestHostileInputOnEveryRoute sends hostile requests to every route of the
// full server, as a client from outside would: each must be answered with a
// 4xx application/problem+json naming the field, never a 5xx, and stored
// data must be unchanged afterwards. A route registered without an entry in
// the table below fails the test: new routes come with their cases.
func TestHostileInputOnEveryRoute(t *testing.T) {
	st := stacktest.Require(t)
	ns := stacktest.Namespace(t)
	cfg := Defaults()
	cfg.API.Addr = "127.0.0.1:0"
	cfg.API.AdminToken = "hostile-test-admin-token"
	cfg.API.MaxBodyBytes = 64 << 10
	cfg.API.ReadTimeout = time.Second // the slow-body cases wait this long
	cfg.Workers = false
	cfg.Backends.OpenSearch.URLs = st.OpenSearchURLs
	cfg.Backends.Redis.Addr = st.RedisAddr
	cfg.Backends.Postgres.URL = st.PostgresURL
	cfg.Indexer.Layout.Prefix = ns + "_"
	cfg.Indexer.Log.Prefix = ns + ":"
	cfg.Feed.KeyPrefix = ns + ":feed:"
	cfg.Reindex.StatePrefix = ns + ":reindex:"
	cfg.Links.New.Namespace = ns + ":links:"
	cfg.Links.Old.Namespace = ns + ":oldlinks:"
	var routes []string
	cfg.onRoutes = func(r []string) { routes = r }
	addr := serve(t, cfg)
	c := &client{t: t, base: "http://" + addr, token: cfg.API.AdminToken}
	// Every answer, hostile or not, must be one api/openapi.json declares
	// for the route (status and problem body). The requests are hostile on
	// purpose: they are not checked.
	spec := loadSpec(t)
	c.spec = spec
	c.httpc = &http.Client{Transport: &openapitest.Transport{Spec: spec, Check: func(x openapitest.Exchange, _, respErr error) {
		if respErr != nil {
			t.Errorf("%s %.80s: the %d response does not match api/openapi.json: %v", x.Request.Method, x.Request.URL.RequestURI(), x.Response.StatusCode, respErr)
		}
	}}}

	// Stored data the hostile requests aim at.
	var user struct{ ID int64 }
	c.mustJSON("POST", "/v1/users", fmt.Sprintf(`{"username":"h%s","profilePic":"https://img.example/a.png"}`, ns[len(ns)-8:]), 201, &user)
	var post struct{ ID int64 }
	c.mustJSON("POST", "/v1/posts", fmt.Sprintf(`{"authorId":%d,"text":"first"}`, user.ID), 201, &post)
	var click struct {
		ClickID string `json:"click_id"`
	}
	c.mustJSON("POST", "/v1/clicks", `{"deep_link_url":"baedal://shop/1","clicked_at":"2025-01-01T00:00:00Z"}`, 201, &click)
	// The admin views of replicas and endpoints exist on a default stack
	// too (one OpenSearch URL, no Redis replicas): an empty list and a note.
	for target, key := range map[string]string{"/v1/admin/replicas": "replicas", "/v1/admin/opensearch-endpoints": "endpoints"} {
		var view map[string]any
		c.mustJSON("GET", target, "", 200, &view)
		if list, ok := view[key].([]any); !ok || len(list) != 0 || view["note"] == "" || view["note"] == nil {
			t.Errorf("GET %s = %v, want an empty %s list and a note", target, view, key)
		}
	}

	u, p := strconv.FormatInt(user.ID, 10), strconv.FormatInt(post.ID, 10)
	reads := []string{"/v1/users/" + u, "/v1/posts/" + p, "/v1/clicks/" + click.ClickID, "/v1/users/" + u + "/feed",
		"/v1/admin/dead-letters", "/admin/reindex", "/v1/admin/links/migration"}
	before := c.snapshot(reads)
	rdb := redis.NewClient(&redis.Options{Addr: st.RedisAddr})
	defer rdb.Close()
	eventsBefore := eventCount(t, rdb, ns)

	table := map[string]hostileRoute{
		"GET /metrics":                       {sample: "/metrics"},
		"GET /livez":                         {sample: "/livez", cases: []hostileCase{{target: "/livez?verbose=1", status: 400, field: "verbose"}}},
		"GET /healthz":                       {sample: "/healthz"},
		"GET /readyz":                        {sample: "/readyz", cases: []hostileCase{{target: "/readyz?verbose=1", status: 400, field: "verbose"}}},
		"GET /openapi.json":                  {sample: "/openapi.json"},
		"GET /{$}":                           {sample: "/"},
		"GET /console/":                      {sample: "/console/"},
		"GET /console/api/meta":              {sample: "/console/api/meta"},
		"GET /console/api/ops":               {sample: "/console/api/ops"},
		"GET /v1/admin/opensearch-endpoints": {sample: "/v1/admin/opensearch-endpoints", cases: []hostileCase{{target: "/v1/admin/opensearch-endpoints?cursor=zzz", status: 400, field: "cursor"}}},
		"GET /v1/admin/replicas":             {sample: "/v1/admin/replicas", cases: []hostileCase{{target: "/v1/admin/replicas?limit=1", status: 400, field: "limit"}}},
		"GET /v1/search": {sample: "/v1/search?q=pizza", cases: []hostileCase{
			{target: "/v1/search?q=%zz", status: 400, field: "q"},
			{target: "/v1/search?q=a;sort=eta", status: 400, field: "q"},
			{target: "/v1/search?q=a&q=b", status: 400, field: "q"},
			{target: "/v1/search?size=abc", status: 400, field: "size"},
			{target: "/v1/search?lat=x&lon=1", status: 400, field: "lat"},
			{target: "/v1/search?cursor=zzz", status: 400, field: "cursor"},
			{target: "/v1/search?layout=zzz", status: 400, field: "layout"},
			{target: "/v1/search?lat=&min_rating=&min_price=0&max_price=0&q=%C2%B1&sort=eta", status: 400, field: "lat"},
			{target: "/v1/search?q=", status: 400, field: "q"},
			{target: "/v1/search?q=%20%E3%80%80", status: 400, field: "q"},
			{target: "/v1/search?explain=1", status: 400, field: "explain"},
		}},
		"POST /v1/events": {sample: "/v1/events", body: `{"type":"shop","id":1,"version":1,"op":"delete"}`, cases: []hostileCase{
			{body: `[{"type":"shop","id":`, status: 400, field: "[0]"},
			{body: `{"type":"shop","id":1,"version":1,"op":"upsert",}`, status: 400, field: "[0]"},
			{body: `{"type":"shop","id":1,"id":2,"version":1,"op":"delete"}`, status: 400, field: "id"},
			{body: `[{"type":"shop","id":1,"version":1,"op":"upsert","fields":{"name":"a","name":"b"}}]`, status: 400, field: "[0].fields.name"},
			{body: `{"type":"shop","id":1,"version":1,"op":"delete"}` + "\n" + `{"type":"shop","id":2,"version":1,"op":"delete","op":"upsert"}`, status: 400, field: "[1].op"},
			{body: `{"type":"shop","id":1,"version":1,"op":"upsert","fields":{"name":"QA\ud800"}}`, status: 400, field: "fields.name"},
			{body: `{"type":"shop","id":1,"version":1,"op":"upsert","fields":{"name":"\udc00QA"}}`, status: 400, field: "fields.name"},
			{body: `[{"type":"shop","id":"1","version":1,"op":"delete"}]`, status: 400, field: "[0].id"},
			{body: `{"type":"shop","id":9223372036854775807,"version":1,"op":"delete"}`, status: 400, field: "[0].id"},
			{body: `{"type":"shop","id":1,"version":1,"op":"upsert","fields":{"name":"a\u0000"}}`, status: 400, field: "fields.name"},
			{body: "[{},{\"type\":\"shop\",\"id\":1,\"version\":1,\"op\":\"upsert\",\"fields\":{\"name\":\"\xff\"}}]", status: 400, field: "[1].fields.name"},
			{body: `{"type":"shop","id":1,"version":1,"op":"delete","colour":1}`, status: 400, field: "[0].colour"},
			{target: "/v1/events?x=1", body: `{"type":"shop","id":1,"version":1,"op":"delete"}`, status: 400, field: "x"},
		}},
		"GET /v1/admin/dead-letters": {sample: "/v1/admin/dead-letters", cases: []hostileCase{
			{target: "/v1/admin/dead-letters?limit=-1", status: 400, field: "limit"},
			{target: "/v1/admin/dead-letters?limit=abc", status: 400, field: "limit"},
			{target: "/v1/admin/dead-letters?after=zzz", status: 400, field: "after"},
		}},
		"POST /v1/admin/dead-letters/{id}/replay": {sample: "/v1/admin/dead-letters/1-0/replay", cases: []hostileCase{
			{target: "/v1/admin/dead-letters/abc/replay", status: 400, field: "id"},
			{status: 404, field: "id"},
		}},
		"DELETE /v1/admin/dead-letters/{id}": {sample: "/v1/admin/dead-letters/1-0", cases: []hostileCase{
			{target: "/v1/admin/dead-letters/1-01", status: 400, field: "id"},
			{status: 404, field: "id"},
		}},
		"GET /admin/reindex": {sample: "/admin/reindex"},
		"POST /admin/reindex": {sample: "/admin/reindex", body: `{"alias":"no-such-alias"}`, cases: []hostileCase{
			{body: `{"shards":"x"}`, status: 400, field: "shards"},
			{body: `{"batch_size":1.5}`, status: 400, field: "batch_size"},
			{body: `{"Alias":"x"}`, status: 400, field: "Alias"},
			{body: `{"alias":"a","alias":"b"}`, status: 400, field: "alias"},
			{body: `{"alias":"\ud800"}`, status: 400, field: "alias"},
			{body: `{"body":{"settings":{"index":{"refresh_interval":"1s","refresh_interval":"2s"}}}}`, status: 400, field: "body.settings.index.refresh_interval"},
			{body: `{"colour":1}`, status: 400, field: "colour"},
			{body: `[]`, status: 400, field: "body"},
			{body: `{"alias":`, status: 400, field: "body"},
			{body: `{"alias":"\u0000"}`, status: 400, field: "alias"},
		}},
		"GET /admin/reindex/{id}": {sample: "/admin/reindex/nojob", cases: []hostileCase{{status: 404}}},
		"POST /admin/reindex/{id}/{action}": {sample: "/admin/reindex/nojob/rethrottle", body: `{"requests_per_second":5}`, cases: []hostileCase{
			{body: `{"requests_per_second":"x"}`, status: 404},
			{body: `{"requests_per_second":1,"requests_per_second":2}`, status: 400, field: "requests_per_second"},
		}},
		"POST /v1/users": {sample: "/v1/users", body: `{"username":"hostile` + ns[len(ns)-6:] + `"}`, cases: []hostileCase{
			{body: `{"username":`, status: 400, field: "body"},
			{body: `{"username":"a","username":"b"}`, status: 400, field: "username"},
			{body: `{"username":"sur","profilePic":"https://img.example/\ud800.png"}`, status: 400, field: "profilePic"},
			{body: `{"Username":"case"}`, status: 400, field: "Username"},
			{body: `{"username":5}`, status: 400, field: "username"},
			{body: `[]`, status: 400, field: "body"},
			{body: `{"username":"nul","profilePic":"a\u0000"}`, status: 400, field: "profilePic"},
			{body: "{\"username\":\"utf\",\"profilePic\":\"\xc3\"}", status: 400, field: "profilePic"},
			{body: `{"username":"extra","admin":true}`, status: 400, field: "admin"},
			{body: `{"username":"` + strings.Repeat("a", 70<<10) + `"}`, status: 413, field: "body"},
		}},
		"GET /v1/users/{id}": {sample: "/v1/users/" + u, cases: []hostileCase{
			{target: "/v1/users/+" + u, status: 400, field: "id"},
			{target: "/v1/users/0" + u, status: 400, field: "id"},
			{target: "/v1/users/abc", status: 400, field: "id"},
		}},
		"PUT /v1/users/{id}/follows/{target}": {sample: "/v1/users/" + u + "/follows/" + u, cases: []hostileCase{
			{target: "/v1/users/0" + u + "/follows/1", status: 400, field: "id"},
			{target: "/v1/users/" + u + "/follows/+1", status: 400, field: "target"},
		}},
		"DELETE /v1/users/{id}/follows/{target}": {sample: "/v1/users/" + u + "/follows/" + u, cases: []hostileCase{
			{target: "/v1/users/" + u + "/follows/01", status: 400, field: "target"},
		}},
		"POST /v1/posts": {sample: "/v1/posts", body: `{"authorId":` + u + `,"text":"slipped through"}`, cases: []hostileCase{
			{body: `{"authorId":"` + u + `","text":"x"}`, status: 400, field: "authorId"},
			{body: `{"authorId":1.5,"text":"x"}`, status: 400, field: "authorId"},
			{body: `{"authorId":` + u + `,"text":"x","text":"y"}`, status: 400, field: "text"},
			{body: `{"authorId":` + u + `,"text":"x\udfff"}`, status: 400, field: "text"},
			{body: `{"authorId":` + u + `,"text":"a\u0000b"}`, status: 400, field: "text"},
			{body: `{"authorId":` + u + ",\"text\":\"a\xffb\"}", status: 400, field: "text"},
			{body: `{"authorId":` + u + `,"text":"x","likes":1}`, status: 400, field: "likes"},
			{body: `{"authorId":` + u + `,"text":`, status: 400, field: "body"},
		}},
		"GET /v1/posts/{id}": {sample: "/v1/posts/" + p, cases: []hostileCase{{target: "/v1/posts/0x1", status: 400, field: "id"}}},
		"GET /v1/posts/{id}/fanout": {sample: "/v1/posts/" + p + "/fanout", cases: []hostileCase{
			{target: "/v1/posts/0x1/fanout", status: 400, field: "id"},
			{target: "/v1/posts/" + p + "/fanout?watch=1", status: 400, field: "watch"},
			{target: "/v1/posts/999999999999/fanout", status: 404, field: "id"},
		}},
		"GET /v1/feed/example": {sample: "/v1/feed/example", cases: []hostileCase{{target: "/v1/feed/example?limit=1", status: 400, field: "limit"}}},
		"GET /v1/users/{id}/feed/strategies": {sample: "/v1/users/" + u + "/feed/strategies", cases: []hostileCase{
			{target: "/v1/users/" + u + "/feed/strategies?limit=0", status: 400, field: "limit"},
			{target: "/v1/users/" + u + "/feed/strategies?limit=100000", status: 400, field: "limit"},
			{target: "/v1/users/" + u + "/feed/strategies?before=5", status: 400, field: "before"},
			{target: "/v1/users/-1/feed/strategies", status: 400, field: "id"},
		}},
		"GET /v1/users/{id}/feed": {sample: "/v1/users/" + u + "/feed", cases: []hostileCase{
			{target: "/v1/users/" + u + "/feed?limit=-1", status: 400, field: "limit"},
			{target: "/v1/users/" + u + "/feed?limit=abc", status: 400, field: "limit"},
			{target: "/v1/users/" + u + "/feed?cursor=zzz", status: 400, field: "cursor"},
			{target: "/v1/users/" + u + "/feed?before=%2B5", status: 400, field: "before"},
		}},
		"GET /api/v1/feeds": {sample: "/api/v1/feeds?user-id=" + u, cases: []hostileCase{
			{target: "/api/v1/feeds?user-id=%2B" + u, status: 400, field: "user-id"},
			{target: "/api/v1/feeds?user-id=" + u + "&limit=-1", status: 400, field: "limit"},
			{target: "/api/v1/feeds?user-id=" + u + "&limit=abc", status: 400, field: "limit"},
			{target: "/api/v1/feeds?user-id=" + u + "&cursor=zzz", status: 400, field: "cursor"},
			{target: "/api/v1/feeds?user-id=" + u + "&user-id=1", status: 400, field: "user-id"},
			{target: "/api/v1/feeds?limit=&user-id=" + u, status: 400, field: "limit"},
		}},
		"POST /api/v1/tweets": {sample: "/api/v1/tweets", body: `{"senderId":` + u + `,"text":"slipped through"}`, cases: []hostileCase{
			{body: `{"senderId":true,"text":"x"}`, status: 400, field: "senderId"},
			{body: `{"senderId":` + u + `,"senderId":1,"text":"x"}`, status: 400, field: "senderId"},
			{body: `{"senderId":` + u + `,"text":"\ud800\ud800"}`, status: 400, field: "text"},
			{body: `{"senderId":` + u + `,"text":"\u0000"}`, status: 400, field: "text"},
			{body: `{"senderId":` + u + `,"text":"x","at":1}`, status: 400, field: "at"},
		}},
		"POST /v1/clicks": {sample: "/v1/clicks", body: `{"deep_link_url":"baedal://slipped","clicked_at":"2025-01-01T00:00:00Z"}`, cases: []hostileCase{
			{body: `{"deep_link_url":7}`, status: 400, field: "deep_link_url"},
			{body: `{"deep_link_url":"baedal://x","clicked_at":"2025-01-01T00:00:00Z","device":{"advertising_id":"nope"}}`, status: 400, field: "device.advertising_id"},
			{body: `{"deep_link_url":"baedal://x","clicked_at":"yesterday"}`, status: 400, field: "clicked_at"},
			{body: `{"deep_link_url":"baedal://x","clicked_at":"2025-01-01T00:00:00Z","device":{"ip":"999.1.1.1"}}`, status: 400, field: "device.ip"},
			{body: `{"deep_link_url":"baedal://x","clicked_at":"2025-01-01T00:00:00Z","device":{"screen_width":-1}}`, status: 400, field: "device.screen_width"},
			{body: `{"deep_link_url":"baedal://x","clicked_at":"2025-01-01T00:00:00Z","utm":{"colour":"x"}}`, status: 400, field: "utm.colour"},
			{body: `{"deep_link_url":"baedal://x","clicked_at":"2025-01-01T00:00:00Z","Clicked_At":"2026-01-01T00:00:00Z"}`, status: 400, field: "Clicked_At"},
			{body: `{"deep_link_url":"baedal://x","clicked_at":"2025-01-01T00:00:00Z","device":{"ip":"203.0.113.1","ip":"203.0.113.2"}}`, status: 400, field: "device.ip"},
			{body: `{"deep_link_url":"baedal://x","clicked_at":"2025-01-01T00:00:00Z","referrer":"r\ud800"}`, status: 400, field: "referrer"},
			{body: `{"click_id":5}`, status: 400, field: "click_id"},
			{body: `{"deep_link_url":"baedal://x\u0000","clicked_at":"2025-01-01T00:00:00Z"}`, status: 400, field: "deep_link_url"},
			{body: "{\"deep_link_url\":\"baedal://x\",\"referrer\":\"\xff\",\"clicked_at\":\"2025-01-01T00:00:00Z\"}", status: 400, field: "referrer"},
			{body: `{"deep_link_url":"baedal://x","clicked_at":"2025-01-01T00:00:00Z","colour":1}`, status: 400, field: "colour"},
			{body: `{`, status: 400, field: "body"},
			{body: `{"referrer":"` + strings.Repeat("a", 20<<10) + `"}`, status: 413, field: "body"},
		}},
		"GET /v1/clicks/{id}":           {sample: "/v1/clicks/" + click.ClickID, cases: []hostileCase{{target: "/v1/clicks/zzz", status: 400, field: "id"}}},
		"POST /v1/clicks/{id}/resolve":  {sample: "/v1/clicks/" + click.ClickID + "/resolve", cases: []hostileCase{{target: "/v1/clicks/zzz/resolve", status: 400, field: "id"}}},
		"GET /v1/admin/links/migration": {sample: "/v1/admin/links/migration"},
		"GET /v1/admin/links/memory": {sample: "/v1/admin/links/memory?records=3", cases: []hostileCase{
			{target: "/v1/admin/links/memory?records=0", status: 400, field: "records"},
			{target: "/v1/admin/links/memory?records=2001", status: 400, field: "records"},
			{target: "/v1/admin/links/memory?records=1e3", status: 400, field: "records"},
			{target: "/v1/admin/links/memory?records=%zz", status: 400, field: "records"},
			{target: "/v1/admin/links/memory?keys=1", status: 400, field: "keys"},
		}},
		"PUT /v1/admin/links/migration": {sample: "/v1/admin/links/migration", body: `{"mode":"dual-write"}`, cases: []hostileCase{
			{body: `{"mode":1}`, status: 400, field: "mode"},
			{body: `{"mode":"dual-write","mode":"old-only"}`, status: 400, field: "mode"},
			{body: `{"mode":"dual-write\udc00"}`, status: 400, field: "mode"},
			{body: `{"mode":"x\u0000"}`, status: 400, field: "mode"},
			{body: `{"mode":"dual-write","y":1}`, status: 400, field: "y"},
			{body: `{"mode":"` + strings.Repeat("x", 5000) + `"}`, status: 413, field: "body"},
		}},
	}
	for _, r := range routes {
		if _, ok := table[r]; !ok {
			t.Errorf("route %q has no hostile-input cases: add it to the table of TestHostileInputOnEveryRoute", r)
		}
	}
	for r := range table {
		if !slices.Contains(routes, r) {
			t.Errorf("the table has cases for %q, which is not registered", r)
		}
	}
	takesBody := map[string]bool{}
	for _, op := range spec.Operations() {
		if op.Op.RequestBody != nil {
			takesBody[op.Pattern] = true
			if table[op.Pattern].body == "" {
				t.Errorf("route %q takes a body: give it a valid sample body in the table of TestHostileInputOnEveryRoute", op.Pattern)
			}
		}
	}

	var slow []func()
	for _, pattern := range routes {
		route, ok := table[pattern]
		if !ok {
			continue
		}
		method, _, _ := strings.Cut(pattern, " ")
		sample := route.sample
		sep := "?"
		if strings.Contains(sample, "?") {
			sep = "&"
		}
		cases := append([]hostileCase{
			{target: sample + sep + "x=%zz", status: 400, field: "x"},
			{target: sample + sep + "x=1;y=2", status: 400, field: "x"},
			{target: sample + sep + "x=1&x=2", status: 400, field: "x"},
			{target: sample + sep + "x=%00", status: 400, field: "x"},
			{target: sample + sep + "x=%ff%fe", status: 400, field: "x"},
			{target: sample + sep + "zz_unknown=1", status: 400, field: "zz_unknown"}, // a parameter the route does not declare
			{target: sample + sep + "zz_unknown", status: 400, field: "zz_unknown"},
			{target: sample + sep + "q=" + strings.Repeat("a", 512<<10), status: 431, field: "query"},
			{body: "\xff\xfe", status: 400, field: "body"},
			{body: "\x00", status: 400, field: "body"},
			{body: strings.Repeat("a", int(cfg.API.MaxBodyBytes)+1), status: 413, field: "body"},
		}, route.cases...)
		if takesBody[pattern] {
			// A valid body, sent as what the route does not read.
			valid := route.body
			cases = append(cases,
				hostileCase{body: valid, header: map[string]string{"Content-Type": "application/xml"}, status: 415, field: "Content-Type"},
				hostileCase{body: valid, header: map[string]string{"Content-Type": "text/plain;charset=utf-8"}, status: 415, field: "Content-Type"},
				hostileCase{body: "--b\r\nContent-Disposition: form-data; name=\"json\"\r\nContent-Type: application/json\r\n\r\n" + valid + "\r\n--b--\r\n",
					header: map[string]string{"Content-Type": "multipart/form-data; boundary=b"}, status: 415, field: "Content-Type"},
				hostileCase{body: valid, header: map[string]string{"Content-Type": "application/json; charset=iso-8859-1"}, status: 415, field: "Content-Type"},
				hostileCase{body: gzipped(t, valid), header: map[string]string{"Content-Type": "application/json", "Content-Encoding": "gzip"}, status: 415, field: "Content-Encoding"},
				hostileCase{body: valid, header: map[string]string{"Content-Encoding": "br"}, status: 415, field: "Content-Encoding"},
			)
		}
		for _, tc := range cases {
			target := tc.target
			if target == "" {
				target = sample
			}
			c.expectProblem(pattern, method, target, tc)
		}
		slow = append(slow, func() { c.expectSlowBody(pattern, method, sample, addr) })
	}
	var wg sync.WaitGroup
	for _, f := range slow {
		wg.Go(f)
	}
	wg.Wait()

	after := c.snapshot(reads)
	for _, r := range reads {
		if before[r] != after[r] {
			t.Errorf("GET %s changed under hostile requests:\nbefore %s\nafter  %s", r, before[r], after[r])
		}
	}
	if n := eventCount(t, rdb, ns); n != eventsBefore {
		t.Errorf("the event log grew from %d to %d entries under hostile requests", eventsBefore, n)
	}
}

type client struct {
	t     *testing.T
	base  string
	token string
	httpc *http.Client      // nil: http.DefaultClient
	spec  *openapitest.Spec // if set, the slow-body answers are checked against it
	mu    sync.Mutex
}

func (c *client) do(method, target, body string) (*http.Response, []byte) {
	c.t.Helper()
	return c.doWith(method, target, body, nil)
}

// doWith is do with request headers besides Authorization.
func (c *client) doWith(method, target, body string, header map[string]string) (*http.Response, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+target, strings.NewReader(body))
	if err != nil {
		c.t.Fatalf("%s %.80s: %v", method, target, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	httpc := c.httpc
	if httpc == nil {
		httpc = http.DefaultClient
	}
	resp, err := httpc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %.80s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func (c *client) mustJSON(method, target, body string, status int, v any) {
	c.t.Helper()
	resp, b := c.do(method, target, body)
	if resp.StatusCode != status || json.Unmarshal(b, v) != nil {
		c.t.Fatalf("%s %s: %d %s, want %d", method, target, resp.StatusCode, b, status)
	}
}

func (c *client) snapshot(targets []string) map[string]string {
	c.t.Helper()
	out := map[string]string{}
	for _, target := range targets {
		resp, b := c.do("GET", target, "")
		if resp.StatusCode != 200 {
			c.t.Fatalf("GET %s: %d %s", target, resp.StatusCode, b)
		}
		out[target] = string(b)
	}
	return out
}

// expectProblem sends one hostile request and checks the answer.
func (c *client) expectProblem(pattern, method, target string, tc hostileCase) {
	c.t.Helper()
	resp, b := c.doWith(method, target, tc.body, tc.header)
	name := fmt.Sprintf("%s: %s %.70q body %.50q", pattern, method, target, tc.body)
	if len(tc.header) > 0 {
		name += fmt.Sprintf(" headers %v", tc.header)
	}
	c.checkProblem(name, resp, b, tc.status, tc.field)
}

func (c *client) checkProblem(name string, resp *http.Response, b []byte, status int, field string) {
	c.t.Helper()
	var p api.Problem
	switch {
	case resp.StatusCode != status:
		c.t.Errorf("%s: status %d, want %d: %.300s", name, resp.StatusCode, status, b)
	case resp.Header.Get("Content-Type") != "application/problem+json":
		c.t.Errorf("%s: Content-Type %q, want application/problem+json", name, resp.Header.Get("Content-Type"))
	case json.Unmarshal(b, &p) != nil || p.Status != status:
		c.t.Errorf("%s: not a problem body: %.300s", name, b)
	case p.Field != field:
		c.t.Errorf("%s: field %q, want %q (%s)", name, p.Field, field, p.Detail)
	}
	for _, leak := range []string{"Go value", "Go struct", "Go type", "feed.", "linkstore.", "reindex.", "catalog:", "linkstore:", "tcp ", "127.0.0.1",
		"2006-01-02", "ParseAddr", "UnmarshalText", "UnmarshalJSON", "json: ", "uint32", "JSON number"} {
		if strings.Contains(p.Detail, leak) {
			c.t.Errorf("%s: the detail shows internals (%q): %s", name, leak, p.Detail)
		}
	}
}

// expectSlowBody sends the headers and part of a body, then nothing: the
// answer must be a 408 problem once the read timeout has passed.
func (c *client) expectSlowBody(pattern, method, target, addr string) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		c.t.Errorf("%s: %v", pattern, err)
		return
	}
	defer conn.Close()
	fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"a\":", method, target, addr, c.token)
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		c.t.Errorf("%s: slow body: no answer: %v", pattern, err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checkProblem(pattern+": slow body", resp, b, http.StatusRequestTimeout, "")
	if c.spec != nil {
		req := httptest.NewRequest(method, target, nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		if _, respErr := c.spec.Validate(context.Background(), openapitest.Exchange{Request: req, Response: resp, ResponseBody: b}); respErr != nil {
			c.t.Errorf("%s: slow body: the %d response does not match api/openapi.json: %v", pattern, resp.StatusCode, respErr)
		}
	}
}

// gzipped is s compressed with gzip.
func gzipped(t *testing.T, s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := io.WriteString(zw, s); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// eventCount is the number of entries in the namespace's event streams,
// dead letters included.
func eventCount(t *testing.T, rdb *redis.Client, ns string) int64 {
	t.Helper()
	keys, err := rdb.Keys(context.Background(), ns+":events:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, k := range keys {
		n += rdb.XLen(context.Background(), k).Val()
	}
	return n
}
