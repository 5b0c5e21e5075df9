package console

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/query"
)

//go:embed static
var staticFiles embed.FS

// Deps is what the console reads and which views it shows.
type Deps struct {
	// Search is true when GET /v1/search is served: shows the Search view.
	Search bool
	// Feed is true when the feed routes, /v1/users/{id}/feed/strategies,
	// /v1/posts/{id}/fanout and /v1/feed/example included, are served: shows
	// the Feed view.
	Feed bool
	// ReindexAliases are the aliases the live reindex routes (/admin/reindex)
	// can rebuild; when not empty, shows the Reindex view.
	ReindexAliases []string
	// Replicas is true when GET /v1/admin/replicas and
	// /v1/admin/opensearch-endpoints are served: shows the Replicas view.
	Replicas bool
	// Links is true when the click routes and /v1/admin/links/migration and
	// /v1/admin/links/memory are served: shows the Links view.
	Links bool
	// Gatherer is read by /console/api/ops (usually the server's registry);
	// nil hides the Ops view and makes the endpoint answer 404.
	Gatherer prometheus.Gatherer
	// DefaultLayout is the layout GET /v1/search uses when it names none
	// (it can change once the server has checked OpenSearch); nil: split.
	DefaultLayout func() layout.Kind
}

// views lists the ids of the views the page may show, in nav order.
func (d Deps) views() []string {
	views := []string{}
	if d.Search {
		views = append(views, "search")
	}
	if d.Feed {
		views = append(views, "feed")
	}
	if d.Links {
		views = append(views, "links")
	}
	if len(d.ReindexAliases) > 0 {
		views = append(views, "reindex")
	}
	if d.Replicas {
		views = append(views, "replicas")
	}
	if d.Gatherer != nil {
		views = append(views, "ops")
	}
	return views
}

// Preset is a named user location.
type Preset struct {
	Name string  `json:"name"`
	Lat  float64 `json:"lat"`
	Lon  float64 `json:"lon"`
}

// SeoulPresets are the location presets of the search view: busy spots of
// Seoul districts.
func SeoulPresets() []Preset {
	return []Preset{
		{"강남역", 37.4979, 127.0276},
		{"홍대입구", 37.5563, 126.9236},
		{"잠실", 37.5133, 127.1001},
		{"여의도", 37.5219, 126.9245},
		{"종로", 37.5700, 126.9830},
		{"건대입구", 37.5404, 127.0692},
		{"신림", 37.4842, 126.9297},
		{"노원", 37.6542, 127.0568},
	}
}

// Meta is the body of GET /console/api/meta.
type Meta struct {
	Views      []string `json:"views"`
	Categories []string `json:"categories"`
	Sorts      []string `json:"sorts"`
	Layouts    []string `json:"layouts"`
	Presets    []Preset `json:"presets"`
	MaxSize    int      `json:"max_size"`
	// ReindexAliases are the aliases the Reindex view offers.
	ReindexAliases []string `json:"reindex_aliases"`
}

func newMeta(d Deps) Meta {
	def := layout.Split
	if d.DefaultLayout != nil {
		def = d.DefaultLayout()
	}
	// The default layout first; the others are compared with it.
	layouts := []string{string(def)}
	for _, k := range []layout.Kind{layout.Split, layout.Nested, layout.Hot} {
		if k != def {
			layouts = append(layouts, string(k))
		}
	}
	return Meta{
		Views:          d.views(),
		Categories:     catalog.Categories(),
		Sorts:          query.Sorts(),
		Layouts:        layouts,
		Presets:        SeoulPresets(),
		MaxSize:        query.MaxSize,
		ReindexAliases: append([]string{}, d.ReindexAliases...),
	}
}

// RegisterRoutes serves the console and its JSON endpoints on s.
func RegisterRoutes(s *api.Server, deps Deps) {
	files := mustLoadStatic()
	s.Handle("GET /{$}", func(w http.ResponseWriter, r *http.Request) error {
		setSecurityHeaders(w)
		http.Redirect(w, r, "/console/", http.StatusFound)
		return nil
	})
	s.Handle("GET /console/", func(w http.ResponseWriter, r *http.Request) error {
		setSecurityHeaders(w)
		return files.serve(w, r, strings.TrimPrefix(r.URL.Path, "/console/"))
	})
	s.Handle("GET /console/api/meta", func(w http.ResponseWriter, r *http.Request) error {
		setSecurityHeaders(w)
		w.Header().Set("Cache-Control", "no-store")
		api.WriteJSON(w, http.StatusOK, newMeta(deps))
		return nil
	})
	s.Handle("GET /console/api/ops", func(w http.ResponseWriter, r *http.Request) error {
		setSecurityHeaders(w)
		if deps.Gatherer == nil {
			return api.NewProblem(http.StatusNotFound, "this server exposes no metrics to the console (console.Deps.Gatherer is nil)")
		}
		snap, err := Snapshot(deps.Gatherer, MetricPrefix)
		if err != nil {
			return fmt.Errorf("console: gather metrics: %w", err)
		}
		w.Header().Set("Cache-Control", "no-store")
		api.WriteJSON(w, http.StatusOK, snap)
		return nil
	})
}

// ContentSecurityPolicy is sent with every console response: nothing but
// this server's own files, no inline script, no framing.
const ContentSecurityPolicy = "default-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

func setSecurityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

// staticFile is one embedded file, ready to serve.
type staticFile struct {
	body        []byte
	contentType string
	etag        string
}

type staticSet map[string]staticFile

// mustLoadStatic reads every embedded file once; the set cannot change while
// the process runs, so a failure is a build defect.
func mustLoadStatic() staticSet {
	root, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err)
	}
	set := staticSet{}
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ctype := mime.TypeByExtension(path.Ext(p))
		if path.Ext(p) == ".js" {
			ctype = "text/javascript; charset=utf-8"
		}
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		set[p] = staticFile{body: body, contentType: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		panic(fmt.Sprintf("console: read embedded files: %v", err))
	}
	return set
}

// serve writes the file at name ("" is index.html); files are revalidated
// by ETag on every load, so a new binary's pages are never stale.
func (set staticSet) serve(w http.ResponseWriter, r *http.Request, name string) error {
	if name == "" {
		name = "index.html"
	}
	f, ok := set[name]
	if !ok {
		return api.NewProblem(http.StatusNotFound, "no console file "+r.URL.Path)
	}
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", f.etag)
	if r.Header.Get("If-None-Match") == f.etag {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(f.body)
	return nil
}
