// Package searcher executes search plans on OpenSearch: the split layout as
// planned steps that carry candidate ids and per-shop values between indices,
// the nested baseline as one request, and the hot layout as one request whose
// hot fields come from the baedal-hot plugin's table. All return the same
// Response shape; one executor per layout shares the DSL pieces in dsl.go.
//
// Invariant: every layout returns the same shops, in the same order, with the
// same totals and fields, for any request (tested differentially); the split
// path never truncates candidates (it pages past 10,000 with a point in time
// and search_after).
package searcher

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/query"
	"github.com/baedal/baedal/searcher/rank"
)

// Config tunes the executor.
type Config struct {
	// Timeout bounds one whole search.
	Timeout time.Duration
	// CandidatePage is how many candidates one request of a query step reads.
	CandidatePage int
	// Rank is the relevance formula (the default sort) and the shape of
	// its text query.
	Rank rank.Config
}

// Defaults returns a 5 s timeout, pages of 10,000 candidates and the
// default relevance formula.
func Defaults() Config {
	return Config{Timeout: 5 * time.Second, CandidatePage: 10000, Rank: rank.Defaults()}
}

// Flags binds the configuration.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.DurationVar(&c.Timeout, "search-timeout", c.Timeout, "timeout of one search")
	fs.IntVar(&c.CandidatePage, "search-candidate-page", c.CandidatePage, "candidates read per request of a query step (at most 10000)")
	c.Rank.Flags(fs)
}

// Validate names the first invalid field.
func (c *Config) Validate() error {
	if c.Timeout <= 0 {
		return fmt.Errorf("search-timeout: got %s, must be > 0", c.Timeout)
	}
	if c.CandidatePage < 1 || c.CandidatePage > 10000 {
		return fmt.Errorf("search-candidate-page: got %d, allowed: 1..10000", c.CandidatePage)
	}
	return c.Rank.Validate()
}

// Searcher runs searches on one layout configuration.
type Searcher struct {
	os       *osapi.Client
	idx      layout.Config
	cfg      Config
	stepTime *prometheus.HistogramVec
	total    *prometheus.HistogramVec
	// hotDisagreements counts hot-layout hits whose returned hot values
	// contradict the request's hot predicates or the page's order
	// (hotDisagreements in hot.go); it must stay 0.
	hotDisagreements *prometheus.CounterVec

	mu          sync.Mutex
	unavailable map[layout.Kind]string // layout → why it cannot serve
	served      []layout.Kind          // nil: every layout
}

// SetUnavailable marks a layout as unable to serve, with the reason (for
// example: the cluster lacks the baedal-hot plugin); an empty reason makes
// it available again. Every layout is available at first.
func (s *Searcher) SetUnavailable(k layout.Kind, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if reason == "" {
		delete(s.unavailable, k)
	} else {
		s.unavailable[k] = reason
	}
}

// Unavailable returns why a layout cannot serve, or "" when it can.
func (s *Searcher) Unavailable(k layout.Kind) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unavailable[k]
}

// DefaultOrder is the order in which a search that names no layout picks
// one: the first that can serve, hot before split before the nested
// baseline.
var DefaultOrder = []layout.Kind{layout.Hot, layout.Split, layout.Nested}

// SetServed limits the layouts DefaultKind may pick to those this server
// keeps up to date (its indexer's layouts); all, at first.
func (s *Searcher) SetServed(kinds []layout.Kind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.served = slices.Clone(kinds)
}

// DefaultKind is the layout of a search that names none: the first of
// DefaultOrder that is served and available (hot needs the baedal-hot plugin
// on every OpenSearch node). When none is, it is the first served one, whose
// search then answers 503 saying why.
func (s *Searcher) DefaultKind() layout.Kind {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := layout.Kind("")
	for _, k := range DefaultOrder {
		if s.served != nil && !slices.Contains(s.served, k) {
			continue
		}
		if s.unavailable[k] == "" {
			return k
		}
		if first == "" {
			first = k
		}
	}
	if first == "" {
		return layout.Split
	}
	return first
}

// ErrLayoutUnavailable is the error of a search on a layout marked
// unavailable (SetUnavailable).
var ErrLayoutUnavailable = errors.New("searcher: layout unavailable")

// New builds a searcher; reg may be nil.
func New(os *osapi.Client, idx layout.Config, cfg Config, reg prometheus.Registerer) *Searcher {
	s := &Searcher{
		os: os, idx: idx, cfg: cfg, unavailable: make(map[layout.Kind]string),
		stepTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "baedal_search_step_seconds", Help: "Time of one search step, by layout and step.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"layout", "step"}),
		total: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "baedal_search_seconds", Help: "Time of a whole search, by layout.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"layout"}),
		hotDisagreements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baedal_search_hot_disagreements_total",
			Help: "Hot-layout hits whose returned hot values contradict the request's hot filters or the page's sort order, by kind; must stay 0.",
		}, []string{"kind"}),
	}
	if reg != nil {
		reg.MustRegister(s.stepTime, s.total, s.hotDisagreements)
	}
	return s
}

// Config returns the searcher's configuration.
func (s *Searcher) Config() Config { return s.cfg }

// WithConfig returns a searcher like s (the same cluster, indices, served
// and unavailable layouts) with configuration cfg: bench search compares
// rankings with it. Its metrics are its own and registered nowhere.
func (s *Searcher) WithConfig(cfg Config) *Searcher {
	o := New(s.os, s.idx, cfg, nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	maps.Copy(o.unavailable, s.unavailable)
	o.served = slices.Clone(s.served)
	return o
}

// MatchedMenu is a menu that satisfied the search's menu predicate.
type MatchedMenu struct {
	ID          int64               `json:"id"`
	Name        string              `json:"name"`
	Description string              `json:"description"`
	Price       int                 `json:"price"`
	ExtraFee    int                 `json:"extra_fee"`
	CookMinutes int                 `json:"cook_minutes"`
	Popular     bool                `json:"popular"`
	SoldOut     bool                `json:"sold_out"`
	Highlight   map[string][]string `json:"highlight,omitempty"`
}

// ShopHit is one shop of the result page.
type ShopHit struct {
	catalog.Shop
	Version   int64    `json:"version"`
	DistanceM *float64 `json:"distance_m,omitempty"`
	// Delivers says whether the search's location is within the shop's
	// delivery radius (only with lat and lon): a shop that does not is
	// shown, below those that do, unless open_now=true leaves it out.
	Delivers   *bool `json:"delivers,omitempty"`
	ETAMinutes *int  `json:"eta_minutes,omitempty"`
	// Rank is each relevance signal's points (explain=true, sort
	// relevance): package rank's formula, Total the value the layout
	// sorted by.
	Rank         *rank.Contributions `json:"rank,omitempty"`
	MatchedMenus []MatchedMenu       `json:"matched_menus"`
}

// StepStats is what explain reports for one step.
type StepStats struct {
	Name         string  `json:"name"`
	Index        string  `json:"index"`
	Requests     int     `json:"requests"`
	Candidates   int     `json:"candidates"`
	TookMs       float64 `json:"took_ms"`
	ServerTookMs int     `json:"server_took_ms"`
}

// Explain is the executed plan.
type Explain struct {
	Plan    []string    `json:"plan"`
	Reasons []string    `json:"reasons"`
	Steps   []StepStats `json:"steps"`
	// Requests are the search requests sent to OpenSearch, in order
	// (explain=dsl only).
	Requests []DSLRequest `json:"requests,omitempty"`
}

// DSLRequest is one search request sent to OpenSearch, as explain=dsl
// shows it: ready to paste into OpenSearch Dashboards' Dev Tools.
type DSLRequest struct {
	Step  string `json:"step"`
	Index string `json:"index"`
	// Method and Path as sent: a page read through a point in time goes to
	// /_search, the point in time naming the index (it expires a minute
	// after the search, so paste such a request soon or drop its "pit").
	Method string          `json:"method"`
	Path   string          `json:"path"`
	Body   json.RawMessage `json:"body"`
	// DevTools is "POST <path>" and the indented body.
	DevTools string `json:"dev_tools"`
}

// Response is a page of results.
type Response struct {
	Layout string `json:"layout"`
	// FallbackFrom names the layout the search was meant for when another
	// answered because that one was unavailable (see Fallback).
	FallbackFrom string    `json:"fallback_from,omitempty"`
	Total        int       `json:"total"`
	Page         int       `json:"page"`
	Size         int       `json:"size"`
	TookMs       float64   `json:"took_ms"`
	Shops        []ShopHit `json:"shops"`
	Explain      *Explain  `json:"explain,omitempty"`
}

// ErrTimeout is returned when a search exceeds its deadline.
var ErrTimeout = errors.New("searcher: search timed out")

// Search runs req on the given layout.
func (s *Searcher) Search(ctx context.Context, req query.Request, kind layout.Kind) (*Response, error) {
	if why := s.Unavailable(kind); why != "" {
		return nil, fmt.Errorf("%w: %s: %s", ErrLayoutUnavailable, kind, why)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	start := time.Now()
	run := &execution{s: s, req: &req, kind: kind}
	var resp *Response
	var err error
	switch kind {
	case layout.Nested:
		run.plan = query.PlanNested()
		resp, err = run.nested(ctx)
	case layout.Hot:
		run.plan = query.PlanHot()
		resp, err = run.hot(ctx)
	default:
		run.plan = query.PlanSteps(req)
		resp, err = run.split(ctx)
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w after %s: %v", ErrTimeout, s.cfg.Timeout, err)
		}
		return nil, err
	}
	took := time.Since(start)
	s.total.WithLabelValues(string(kind)).Observe(took.Seconds())
	resp.Layout, resp.Page, resp.Size = string(kind), req.Page, req.Size
	resp.TookMs = ms(took)
	if req.Explain {
		ex := &Explain{Reasons: run.plan.Reasons, Steps: run.stats, Requests: run.requests}
		for _, st := range run.plan.Steps {
			ex.Plan = append(ex.Plan, st.Name())
		}
		resp.Explain = ex
	}
	decorate(resp, &req)
	return resp, nil
}

// execution is the state of one search.
type execution struct {
	s     *Searcher
	req   *query.Request
	kind  layout.Kind
	plan  query.Plan
	stats []StepStats
	// requests are the bodies sent, kept for explain=dsl.
	requests []DSLRequest
}

// searchResponse is the part of an OpenSearch search response we read.
type searchResponse struct {
	Took     int    `json:"took"`
	TimedOut bool   `json:"timed_out"`
	PitID    string `json:"pit_id"`
	Shards   struct {
		Total    int               `json:"total"`
		Failed   int               `json:"failed"`
		Failures []json.RawMessage `json:"failures"`
	} `json:"_shards"`
	Hits struct {
		Total struct {
			Value int `json:"value"`
		} `json:"total"`
		Hits []hit `json:"hits"`
	} `json:"hits"`
}

type hit struct {
	ID        string                       `json:"_id"`
	Score     *float64                     `json:"_score"`
	Source    json.RawMessage              `json:"_source"`
	Sort      []json.RawMessage            `json:"sort"`
	Fields    map[string][]json.RawMessage `json:"fields"`
	InnerHits map[string]struct {
		Hits struct {
			Hits []struct {
				Source    MatchedMenu         `json:"_source"`
				Highlight map[string][]string `json:"highlight"`
			} `json:"hits"`
		} `json:"hits"`
	} `json:"inner_hits"`
}

// search sends one request and records it in the step's stats.
func (e *execution) search(ctx context.Context, step *StepStats, path string, body obj) (*searchResponse, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	if e.req.ExplainDSL {
		e.requests = append(e.requests, dslRequest(step, http.MethodPost, path, body, raw))
	}
	var out searchResponse
	start := time.Now()
	err = e.s.os.Do(ctx, http.MethodPost, path, raw, &out)
	step.TookMs += ms(time.Since(start))
	step.Requests++
	if err != nil {
		return nil, fmt.Errorf("searcher: step %s: %w", step.Name, err)
	}
	if err := out.complete(); err != nil {
		return nil, fmt.Errorf("searcher: step %s: %w", step.Name, err)
	}
	step.ServerTookMs += out.Took
	return &out, nil
}

// dslRequest is what explain=dsl shows of one request: the body as sent,
// and for Dev Tools indented without escaping <, > and & (painless scripts
// read better).
func dslRequest(step *StepStats, method, path string, body obj, raw []byte) DSLRequest {
	var pretty bytes.Buffer
	enc := json.NewEncoder(&pretty)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(body); err != nil {
		pretty.Reset()
		pretty.Write(raw)
	}
	return DSLRequest{Step: step.Name, Index: step.Index, Method: method, Path: path,
		Body: json.RawMessage(raw), DevTools: method + " " + path + "\n" + strings.TrimSuffix(pretty.String(), "\n")}
}

// ErrPartialResults is the error of a search that OpenSearch answered with
// partial results (failed shards, or timed out).
var ErrPartialResults = errors.New("searcher: partial results")

// complete returns an error when the response holds partial results: some
// shards failed (OpenSearch still answers 200 when others succeeded) or the
// search timed out. A partial page or candidate list would be a wrong answer,
// not a slow one.
func (r *searchResponse) complete() error {
	if r.Shards.Failed > 0 {
		first := ""
		if len(r.Shards.Failures) > 0 {
			first = ": " + string(r.Shards.Failures[0])
		}
		return fmt.Errorf("%w: %d of %d shards failed%.300s", ErrPartialResults, r.Shards.Failed, r.Shards.Total, first)
	}
	if r.TimedOut {
		return fmt.Errorf("%w: the search timed out", ErrPartialResults)
	}
	return nil
}

func (e *execution) finishStep(st StepStats) {
	e.s.stepTime.WithLabelValues(string(e.kind), st.Name).Observe(st.TookMs / 1000)
	e.stats = append(e.stats, st)
}

// matchedMenus reads the inner hits of one shop.
func matchedMenus(h hit) []MatchedMenu {
	out := []MatchedMenu{}
	for _, ih := range h.InnerHits["matched"].Hits.Hits {
		m := ih.Source
		if len(ih.Highlight) > 0 {
			m.Highlight = map[string][]string{}
			for k, v := range ih.Highlight {
				m.Highlight[strings.TrimPrefix(k, "menus.")] = v
			}
		}
		out = append(out, m)
	}
	return out
}

// decorate adds the display-only distance and ETA.
func decorate(resp *Response, r *query.Request) {
	for i := range resp.Shops {
		sh := &resp.Shops[i]
		if r.HasLocation() {
			d := haversineMeters(*r.Lat, *r.Lon, sh.Location.Lat, sh.Location.Lon)
			sh.DistanceM = &d
		}
	}
}

func haversineMeters(lat1, lon1, lat2, lon2 float64) float64 {
	const r = 6371008.7714
	toRad := math.Pi / 180
	dLat, dLon := (lat2-lat1)*toRad, (lon2-lon1)*toRad
	a := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(lat1*toRad)*math.Cos(lat2*toRad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return math.Round(2*r*math.Asin(math.Sqrt(a))*10) / 10
}

func ms(d time.Duration) float64 { return math.Round(float64(d.Microseconds())) / 1000 }

func trimFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func idKey(id int64) string { return strconv.FormatInt(id, 10) }
