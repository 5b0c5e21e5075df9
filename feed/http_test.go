package feed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baedal/baedal/api"
)

func newTestAPI(t testing.TB, svc *Service) *api.Server {
	s := api.New(api.Defaults(), nil, prometheus.NewRegistry())
	RegisterRoutes(s, svc)
	return s
}

func do(s http.Handler, method, path, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return rec
}

func TestHTTPBadInputIsAClearProblem(t *testing.T) {
	b := newBackends(t)
	svc := newService(t, b, testConfig(StrategyHybrid, b.prefix))
	s := newTestAPI(t, svc)
	alice, bob := mustUser(t, svc, "alice"), mustUser(t, svc, "bob")
	long := strings.Repeat("가", 281)
	cases := []struct {
		method, path, body string
		status             int
		field, detail      string
	}{
		{"POST", "/v1/users", `{"username":`, 400, "body", "JSON"},
		{"POST", "/v1/users", `{"username": 5}`, 400, "username", "string"},
		{"POST", "/v1/users", `{"username": "has space"}`, 400, "username", "a-z"},
		{"POST", "/v1/users", `{"username": "alice"}`, 409, "username", "taken"},
		{"POST", "/v1/users", `{"username": "x"} {"a": 1}`, 400, "body", "trailing"},
		{"PUT", fmt.Sprintf("/v1/users/%d/follows/%d", alice, alice), "", 400, "target", "themselves"},
		{"PUT", fmt.Sprintf("/v1/users/%d/follows/4242", alice), "", 404, "target", "user 4242 does not exist"},
		{"PUT", fmt.Sprintf("/v1/users/4242/follows/%d", alice), "", 404, "id", "user 4242 does not exist"},
		{"PUT", "/v1/users/abc/follows/1", "", 400, "id", "id > 0"},
		{"DELETE", fmt.Sprintf("/v1/users/%d/follows/0", alice), "", 400, "target", "id > 0"},
		{"POST", "/v1/posts", fmt.Sprintf(`{"authorId": %d, "text": %q}`, alice, long), 400, "text", "at most 280 characters, got 281"},
		{"POST", "/v1/posts", fmt.Sprintf(`{"authorId": %d, "text": ""}`, alice), 400, "text", "empty"},
		{"POST", "/v1/posts", `{"authorId": 4242, "text": "hi"}`, 404, "authorId", "4242"},
		{"POST", "/v1/posts", `{"authorId": "1", "text": "hi"}`, 400, "authorId", "must be an integer"},
		{"POST", "/v1/posts", `[1,2]`, 400, "body", ""},
		{"POST", "/api/v1/tweets", `{"senderId": 4242, "text": "hi"}`, 404, "senderId", "4242"},
		{"POST", "/api/v1/tweets", `{"text": "hi"}`, 400, "senderId", "> 0"},
		{"POST", "/api/v1/tweets", `not json`, 400, "body", ""},
		{"GET", "/api/v1/feeds", "", 400, "user-id", "required"},
		{"GET", "/api/v1/feeds?user-id=x", "", 400, "user-id", "integer"},
		{"GET", "/api/v1/feeds?user-id=4242", "", 404, "user-id", "4242"},
		{"GET", fmt.Sprintf("/v1/users/%d/feed?limit=0", bob), "", 400, "limit", "1..200"},
		{"GET", fmt.Sprintf("/v1/users/%d/feed?limit=201", bob), "", 400, "limit", "1..200"},
		{"GET", fmt.Sprintf("/v1/users/%d/feed?before=-3", bob), "", 400, "before", "integer"},
		{"GET", "/v1/posts/77", "", 404, "id", "post 77"},
		{"POST", "/v1/users", `{"username":"` + strings.Repeat("a", 70<<10) + `"}`, 413, "body", "larger"},
		// NUL and invalid UTF-8 (PostgreSQL refuses NUL; JSON would turn
		// invalid UTF-8 into U+FFFD), named by field.
		{"POST", "/v1/users", `{"username":"nul","profilePic":"x\u0000"}`, 400, "profilePic", "NUL"},
		{"POST", "/v1/posts", fmt.Sprintf(`{"authorId": %d, "text": "a\u0000b"}`, alice), 400, "text", "NUL"},
		{"POST", "/api/v1/tweets", fmt.Sprintf("{\"senderId\": %d, \"text\": \"a\xffb\"}", alice), 400, "text", "UTF-8"},
		// Unknown fields, and no Go type names in details.
		{"POST", "/v1/users", `{"username":"newbie","admin":true}`, 400, "admin", "unknown"},
		{"POST", "/v1/posts", fmt.Sprintf(`{"authorId": %d, "text": "hi", "likes": 3}`, alice), 400, "likes", "unknown"},
		{"POST", "/v1/users", `[]`, 400, "body", "must be an object, got an array"},
		// Canonical ids only.
		{"GET", "/v1/users/+5", "", 400, "id", "plain decimal"},
		{"GET", "/v1/users/007", "", 400, "id", "plain decimal"},
		{"GET", "/api/v1/feeds?user-id=%2B5", "", 400, "user-id", "plain decimal"},
		{"GET", "/api/v1/feeds?user-id=05", "", 400, "user-id", "plain decimal"},
		// Query parameters: validated, known, once, well encoded.
		{"GET", fmt.Sprintf("/api/v1/feeds?user-id=%d&limit=-1", bob), "", 400, "limit", "1..200"},
		{"GET", fmt.Sprintf("/api/v1/feeds?user-id=%d&limit=abc", bob), "", 400, "limit", "1..200"},
		{"GET", fmt.Sprintf("/api/v1/feeds?user-id=%d&cursor=zzz", bob), "", 400, "cursor", "unknown"},
		{"GET", fmt.Sprintf("/v1/users/%d/feed?cursor=zzz", bob), "", 400, "cursor", "unknown"},
		{"GET", fmt.Sprintf("/api/v1/feeds?user-id=%d&user-id=%d", bob, alice), "", 400, "user-id", "more than once"},
		{"GET", "/api/v1/feeds?user-id=%zz", "", 400, "user-id", "percent-encoding"},
		{"GET", fmt.Sprintf("/v1/users/%d/feed?limit=5;before=3", bob), "", 400, "limit", "';'"},
	}
	for _, c := range cases {
		rec := do(s, c.method, c.path, c.body)
		name := c.method + " " + c.path + " " + truncate(c.body, 40)
		if rec.Code != c.status {
			t.Errorf("%s: status %d, want %d: %s", name, rec.Code, c.status, rec.Body)
			continue
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("%s: Content-Type %q", name, ct)
		}
		var p api.Problem
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Errorf("%s: not a problem body: %s", name, rec.Body)
			continue
		}
		if p.Field != c.field || !strings.Contains(p.Detail, c.detail) {
			t.Errorf("%s: field %q detail %q; want field %q and a detail containing %q", name, p.Field, p.Detail, c.field, c.detail)
		}
	}
}

func TestHTTPCompatibilityRoutes(t *testing.T) {
	b := newBackends(t)
	svc := newService(t, b, testConfig(StrategyHybrid, b.prefix))
	startWorkers(t, svc)
	s := newTestAPI(t, svc)

	rec := do(s, "POST", "/v1/users", `{"username": "writer", "profilePic": "https://img.example/w.png"}`)
	var writer User
	if rec.Code != 201 || json.Unmarshal(rec.Body.Bytes(), &writer) != nil || rec.Header().Get("Location") != fmt.Sprintf("/v1/users/%d", writer.ID) {
		t.Fatalf("create user: %d %s %q", rec.Code, rec.Body, rec.Header().Get("Location"))
	}
	reader := mustUser(t, svc, "reader")
	if rec := do(s, "PUT", fmt.Sprintf("/v1/users/%d/follows/%d", reader, writer.ID), ""); rec.Code != 204 {
		t.Fatalf("follow: %d %s", rec.Code, rec.Body)
	}
	for _, text := range []string{"first", "second"} {
		rec := do(s, "POST", "/api/v1/tweets", fmt.Sprintf(`{"senderId": %d, "text": %q}`, writer.ID, text))
		if rec.Code != 201 || !strings.HasPrefix(rec.Header().Get("Location"), "/v1/posts/") {
			t.Fatalf("tweet: %d %s Location %q", rec.Code, rec.Body, rec.Header().Get("Location"))
		}
		if got := do(s, "GET", rec.Header().Get("Location"), ""); got.Code != 200 || !strings.Contains(got.Body.String(), text) {
			t.Errorf("GET Location: %d %s", got.Code, got.Body)
		}
	}
	waitSettled(t, svc)
	rec = do(s, "GET", fmt.Sprintf("/api/v1/feeds?user-id=%d", reader), "")
	if rec.Code != 200 {
		t.Fatalf("compat feed: %d %s", rec.Code, rec.Body)
	}
	var items []map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &items); err != nil {
		t.Fatalf("compat feed is not a JSON array: %s", rec.Body)
	}
	if len(items) != 2 || items[0]["text"] != "second" || items[1]["text"] != "first" {
		t.Fatalf("compat feed = %s, want second then first", rec.Body)
	}
	for _, key := range []string{"username", "profilePic", "text", "timestamp"} {
		if _, ok := items[0][key]; !ok || len(items[0]) != 4 {
			t.Errorf("compat item %v: want exactly username, profilePic, text, timestamp", items[0])
		}
	}
	if items[0]["username"] != "writer" || items[0]["profilePic"] != "https://img.example/w.png" {
		t.Errorf("compat item %v: wrong author fields", items[0])
	}
	rec = do(s, "GET", fmt.Sprintf("/api/v1/feeds?user-id=%d", writer.ID), "")
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != "[]" {
		t.Errorf("empty compat feed: %d %q, want 200 []", rec.Code, rec.Body)
	}
	rec = do(s, "GET", fmt.Sprintf("/v1/users/%d/feed?limit=1", reader), "")
	var page Page
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &page) != nil || len(page.Posts) != 1 || page.NextBefore != page.Posts[0].ID {
		t.Errorf("v1 feed page: %d %s", rec.Code, rec.Body)
	}
}

// FuzzHTTPHandlers sends arbitrary requests to the feed routes of a real
// deployment: no input may cause a 5xx, and every failure is a problem body.
//
//	go test ./feed -run '^$' -fuzz FuzzHTTPHandlers -fuzztime 30s
func FuzzHTTPHandlers(f *testing.F) {
	seeds := []struct{ method, path, body string }{
		{"POST", "/v1/users", `{"username":"fz","profilePic":""}`},
		{"POST", "/v1/posts", `{"authorId":1,"text":"hello"}`},
		{"POST", "/api/v1/tweets", `{"senderId":1,"text":"hi"}`},
		{"PUT", "/v1/users/1/follows/2", ``},
		{"DELETE", "/v1/users/2/follows/1", ``},
		{"GET", "/v1/users/1/feed?limit=3&before=99999999999", ``},
		{"GET", "/api/v1/feeds?user-id=2", ``},
		{"POST", "/v1/posts", `{"authorId":1e400,"text":null}`},
		{"POST", "/v1/users", "{\"username\":\"\xff\"}"},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.body)
	}
	b := newBackends(f)
	svc := newService(f, b, testConfig(StrategyHybrid, b.prefix))
	startWorkers(f, svc)
	s := newTestAPI(f, svc)
	mustUser(f, svc, "one")
	mustUser(f, svc, "two")
	methods := []string{"GET", "POST", "PUT", "DELETE"}
	f.Fuzz(func(t *testing.T, method, path, body string) {
		if !slices.Contains(methods, method) {
			method = "POST"
		}
		req, err := http.NewRequest(method, "http://127.0.0.1"+path, strings.NewReader(body))
		if err != nil || !strings.HasPrefix(path, "/") {
			t.Skip("not a valid request line")
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q %q: status %d: %s", method, path, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var p api.Problem
			if rec.Header().Get("Content-Type") != "application/problem+json" || json.Unmarshal(rec.Body.Bytes(), &p) != nil || p.Status != rec.Code || p.Detail == "" {
				t.Fatalf("%s %q %q: status %d without a problem body: %s", method, path, body, rec.Code, rec.Body)
			}
		}
	})
}

// FuzzDecodeJSON: the request decoder never panics, and it either fills
// the struct or returns a 4xx problem.
//
//	go test ./feed -run '^$' -fuzz FuzzDecodeJSON -fuzztime 30s
func FuzzDecodeJSON(f *testing.F) {
	for _, seed := range []string{`{"authorId":1,"text":"x"}`, `{"authorId":"1"}`, `{`, `[]`, `{} {}`, `null`, `{"text":"\ud800"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", "/v1/posts", bytes.NewReader(body))
		var v CreatePostRequest
		err := decodeJSON(req, &v)
		if err == nil {
			return
		}
		var p *api.Problem
		if !errors.As(err, &p) || p.Status < 400 || p.Status >= 500 || p.Field == "" && p.Status == 400 {
			t.Fatalf("decodeJSON(%q) = %v, want a 4xx problem naming a field", body, err)
		}
	})
}

// FuzzQueryValue: queryValue returns what r.URL.Query().Get returns, for
// every query string.
//
//	go test ./feed -run '^$' -fuzz FuzzQueryValue -fuzztime 20000x
func FuzzQueryValue(f *testing.F) {
	for _, seed := range []string{"user-id=7", "a=1&user-id=2&user-id=3", "user-id", "user-id=", "&&user-id=5&", "user-id=%37",
		"user%2Did=8", "user-id=1;x=2", "x=1;user-id=2", "user-id=1+2", "=&=user-id", "user-id=a=b", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
		r := &http.Request{URL: &url.URL{Path: "/api/v1/feeds", RawQuery: rawQuery}}
		if got, want := queryValue(r, "user-id"), r.URL.Query().Get("user-id"); got != want {
			t.Fatalf("queryValue(%q) = %q, want %q", rawQuery, got, want)
		}
	})
}
