package console

import (
	"encoding/json"
	"github.com/baedal/baedal/layout"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	pathpkg "path"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/internal/stacktest"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// newTestServer serves the console alone (no search routes).
func newTestServer(t *testing.T, deps Deps) *httptest.Server {
	t.Helper()
	s := api.New(api.Defaults(), nil, prometheus.NewRegistry())
	RegisterRoutes(s, deps)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts
}

func get(t *testing.T, client *http.Client, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func checkSecurityHeaders(t *testing.T, resp *http.Response) {
	t.Helper()
	if got := resp.Header.Get("Content-Security-Policy"); !strings.HasPrefix(got, "default-src 'self'") {
		t.Errorf("%s: Content-Security-Policy = %q, want it to start with default-src 'self'", resp.Request.URL.Path, got)
	}
	if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("%s: X-Content-Type-Options = %q, want nosniff", resp.Request.URL.Path, got)
	}
}

// The page compares with the server's default layout, which it lists
// first, read on every request: the default changes to hot once the server
// finds the baedal-hot plugin on every node.
func TestMetaListsTheServersDefaultLayoutFirst(t *testing.T) {
	def := layout.Split
	ts := newTestServer(t, Deps{Search: true, DefaultLayout: func() layout.Kind { return def }})
	for _, c := range []struct {
		def  layout.Kind
		want []string
	}{{layout.Split, []string{"split", "nested", "hot"}}, {layout.Hot, []string{"hot", "split", "nested"}}} {
		def = c.def
		_, body := get(t, ts.Client(), ts.URL+"/console/api/meta")
		var meta Meta
		if err := json.Unmarshal(body, &meta); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(meta.Layouts, c.want) {
			t.Errorf("default %s: layouts = %v, want %v", c.def, meta.Layouts, c.want)
		}
	}
}

// A view is listed exactly when the server serves its routes, and the page
// (app.js) shows the nav in this order.
func TestMetaListsAViewOnlyWithItsRoutes(t *testing.T) {
	for _, c := range []struct {
		deps Deps
		want []string
	}{
		{Deps{}, []string{}},
		{Deps{Feed: true}, []string{"feed"}},
		{Deps{ReindexAliases: []string{"shops"}, Replicas: true}, []string{"reindex", "replicas"}},
		{Deps{Search: true, Feed: true, Links: true, ReindexAliases: []string{"shops", "menus"}, Replicas: true, Gatherer: prometheus.NewRegistry()},
			[]string{"search", "feed", "links", "reindex", "replicas", "ops"}},
	} {
		ts := newTestServer(t, c.deps)
		_, body := get(t, ts.Client(), ts.URL+"/console/api/meta")
		var meta Meta
		if err := json.Unmarshal(body, &meta); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(meta.Views, c.want) {
			t.Errorf("deps %+v: views = %v, want %v", c.deps, meta.Views, c.want)
		}
		if !slices.Equal(meta.ReindexAliases, c.deps.ReindexAliases) && len(c.deps.ReindexAliases)+len(meta.ReindexAliases) > 0 {
			t.Errorf("reindex aliases = %v, want %v", meta.ReindexAliases, c.deps.ReindexAliases)
		}
	}
}

func TestMetaListsCategoriesSortsPresetsAndViews(t *testing.T) {
	ts := newTestServer(t, Deps{Search: true, Gatherer: prometheus.NewRegistry()})
	resp, body := get(t, ts.Client(), ts.URL+"/console/api/meta")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	checkSecurityHeaders(t, resp)
	var meta Meta
	if err := json.Unmarshal(body, &meta); err != nil {
		t.Fatalf("meta is not JSON: %v: %s", err, body)
	}
	if want := []string{"search", "ops"}; !slices.Equal(meta.Views, want) {
		t.Errorf("views = %v, want %v", meta.Views, want)
	}
	for _, c := range []string{"치킨", "피자", "분식", "카페·디저트"} {
		if !slices.Contains(meta.Categories, c) {
			t.Errorf("categories %v lack %q", meta.Categories, c)
		}
	}
	if want := []string{"relevance", "distance", "delivery_minutes", "rating", "delivery_fee", "eta"}; !slices.Equal(meta.Sorts, want) {
		t.Errorf("sorts = %v, want %v", meta.Sorts, want)
	}
	if want := []string{"split", "nested", "hot"}; !slices.Equal(meta.Layouts, want) {
		t.Errorf("layouts = %v, want %v (split first: the page's default)", meta.Layouts, want)
	}
	if len(meta.Presets) != 8 || meta.Presets[0] != (Preset{"강남역", 37.4979, 127.0276}) {
		t.Errorf("presets = %v, want 8 starting with 강남역 37.4979,127.0276", meta.Presets)
	}
	for _, p := range meta.Presets {
		if p.Lat < 37.4 || p.Lat > 37.7 || p.Lon < 126.8 || p.Lon > 127.2 {
			t.Errorf("preset %s at %g,%g is outside Seoul", p.Name, p.Lat, p.Lon)
		}
	}
	if meta.MaxSize != 100 {
		t.Errorf("max_size = %d, want 100", meta.MaxSize)
	}
}

func TestMetaHidesViewsWhoseEndpointsAreMissing(t *testing.T) {
	ts := newTestServer(t, Deps{})
	_, body := get(t, ts.Client(), ts.URL+"/console/api/meta")
	if !strings.Contains(string(body), `"views":[]`) {
		t.Errorf("meta without search and metrics = %s, want \"views\":[]", body)
	}
	resp, body := get(t, ts.Client(), ts.URL+"/console/api/ops")
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("ops without a gatherer: %d %s %s, want a 404 problem", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

func TestStaticFilesRedirectAndHeaders(t *testing.T) {
	ts := newTestServer(t, Deps{Search: true})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, _ := get(t, noRedirect, ts.URL+"/")
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/console/" {
		t.Errorf("GET / = %d Location %q, want 302 to /console/", resp.StatusCode, resp.Header.Get("Location"))
	}
	for path, wantType := range map[string]string{
		"/console/":                "text/html; charset=utf-8",
		"/console/app.js":          "text/javascript; charset=utf-8",
		"/console/views/search.js": "text/javascript; charset=utf-8",
		"/console/console.css":     "text/css; charset=utf-8",
	} {
		resp, body := get(t, ts.Client(), ts.URL+path)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != wantType {
			t.Errorf("GET %s = %d %q, want 200 %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), wantType)
		}
		checkSecurityHeaders(t, resp)
		if len(body) == 0 {
			t.Errorf("GET %s: empty body", path)
		}
		// Revalidation: the same ETag answers 304 without a body.
		req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
		again, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		again.Body.Close()
		if again.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with If-None-Match %s = %d, want 304", path, resp.Header.Get("ETag"), again.StatusCode)
		}
	}
	resp, body := get(t, ts.Client(), ts.URL+"/console/nope.js")
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "/console/nope.js") {
		t.Errorf("GET a missing file = %d %s, want a 404 problem naming the path", resp.StatusCode, body)
	}
	checkSecurityHeaders(t, resp)
}

// TestPagesLoadNothingFromOutside checks every embedded file for absolute
// URLs and inline script, which the CSP would block and offline use forbids.
func TestPagesLoadNothingFromOutside(t *testing.T) {
	files := mustLoadStatic()
	for _, name := range []string{"index.html", "app.js", "lib.js", "chart.js", "console.css", "views/search.js", "views/ops.js", "views/replicas.js", "views/links.js", "views/feed.js", "views/reindex.js"} {
		f, ok := files[name]
		if !ok {
			t.Errorf("%s is not embedded", name)
			continue
		}
		text := string(f.body)
		for _, bad := range []string{"http://", "https://", "//cdn", "innerHTML", "insertAdjacentHTML", "eval("} {
			if strings.Contains(strings.ReplaceAll(text, "http://www.w3.org/2000/svg", ""), bad) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
	}
	if html := string(files["index.html"].body); strings.Contains(html, "<script>") || strings.Contains(html, "style=") {
		t.Error("index.html has inline script or style, which the CSP blocks")
	}
}

// FuzzConsolePaths sends arbitrary paths under /console/: every answer is a
// file, a redirect or a problem, with the security headers on any path
// that stays under /console/, and never a file from outside static/.
func FuzzConsolePaths(f *testing.F) {
	for _, seed := range []string{"", "app.js", "views/search.js", "../go.mod", "%2e%2e/console.go", "static/index.html", "api/meta", "api/ops", "x\x00y", "한글.js", "views/", "//app.js"} {
		f.Add(seed)
	}
	s := api.New(api.Defaults(), nil, prometheus.NewRegistry())
	RegisterRoutes(s, Deps{Search: true, Gatherer: prometheus.NewRegistry()})
	f.Fuzz(func(t *testing.T, path string) {
		req := httptest.NewRequest(http.MethodGet, "/console/", nil)
		req.URL.Path = "/console/" + path
		req.URL.RawPath = ""
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		resp := rec.Result()
		resp.Request = req
		switch resp.StatusCode {
		case http.StatusOK:
		case http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
			return // the mux cleaning the path; it serves nothing itself
		default:
			if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("GET /console/%q = %d with %q, want a problem body", path, resp.StatusCode, ct)
			}
		}
		// A path that cleans to outside /console/ is the API's 404, not
		// ours; a path the API refuses (a NUL, invalid UTF-8) is its 400.
		refused := resp.StatusCode == http.StatusBadRequest && resp.Header.Get("Content-Type") == "application/problem+json"
		if strings.HasPrefix(pathpkg.Clean("/console/"+path)+"/", "/console/") && !refused {
			checkSecurityHeaders(t, resp)
		}
		if resp.StatusCode == http.StatusOK && strings.Contains(rec.Body.String(), "package console") {
			t.Fatalf("GET /console/%q served Go source", path)
		}
	})
}
