package searcher

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/query"
)

// FallbackConfig says when a search that named no layout may be answered by
// another, equivalent layout (docs/search.md, "When a layout is
// unavailable").
type FallbackConfig struct {
	// MaxLag is the largest indexer lag (age of the oldest event not yet
	// delivered to the layout's indexer) of a layout that may answer for
	// another; 0 disables the fallback.
	MaxLag time.Duration
	// RetryAfter is the Retry-After of a search refused because its layout
	// is unavailable and no other could answer.
	RetryAfter time.Duration
}

// DefaultFallback allows a fallback to a layout at most 5 s behind, and
// asks refused clients to retry after 5 s.
func DefaultFallback() FallbackConfig {
	return FallbackConfig{MaxLag: 5 * time.Second, RetryAfter: api.DefaultRetryAfter}
}

// Flags binds the configuration.
func (c *FallbackConfig) Flags(fs *flag.FlagSet) {
	fs.DurationVar(&c.MaxLag, "search-fallback-max-lag", c.MaxLag, "a search that names no layout may be answered by another layout when its own is unavailable, if that one's indexer lag is under this; 0 disables")
	fs.DurationVar(&c.RetryAfter, "search-retry-after", c.RetryAfter, "Retry-After of a search refused 503 because its layout is unavailable")
}

// Validate names the first invalid field.
func (c *FallbackConfig) Validate() error {
	if c.MaxLag < 0 {
		return fmt.Errorf("search-fallback-max-lag: got %s, must be >= 0", c.MaxLag)
	}
	if c.RetryAfter < time.Second || c.RetryAfter > time.Hour {
		return fmt.Errorf("search-retry-after: got %s, allowed: 1s..1h", c.RetryAfter)
	}
	return nil
}

// LagFunc returns the indexer lag of a layout.
type LagFunc func(ctx context.Context, k layout.Kind) (time.Duration, error)

// Fallback answers a search whose layout is unavailable from another
// layout that is caught up. The layouts return identical results for the
// same state (TestSplitEqualsNested), so the answer is the same, at most
// MaxLag older.
type Fallback struct {
	cfg     FallbackConfig
	kinds   []layout.Kind
	lag     LagFunc
	counter *prometheus.CounterVec

	mu     sync.Mutex
	sample map[layout.Kind]lagSample
}

type lagSample struct {
	at  time.Time
	lag time.Duration
	err error
}

// lagSampleTTL bounds how often one layout's lag is read during an outage,
// when every search may ask.
const lagSampleTTL = time.Second

// NewFallback builds the fallback over kinds (the configured layouts, in
// the order they are tried); lag reads a layout's indexer lag. reg may be
// nil.
func NewFallback(cfg FallbackConfig, kinds []layout.Kind, lag LagFunc, reg prometheus.Registerer) *Fallback {
	f := &Fallback{
		cfg: cfg, kinds: kinds, lag: lag, sample: map[layout.Kind]lagSample{},
		counter: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "baedal_search_fallbacks_total",
			Help: "Searches that named no layout, answered by another layout because theirs was unavailable, by layout tried (from) and layout that answered (to).",
		}, []string{"from", "to"}),
	}
	if reg != nil {
		reg.MustRegister(f.counter)
	}
	return f
}

// caughtUp reports whether layout k's indexer lag is under MaxLag.
func (f *Fallback) caughtUp(ctx context.Context, k layout.Kind) bool {
	f.mu.Lock()
	s, ok := f.sample[k]
	f.mu.Unlock()
	if !ok || time.Since(s.at) > lagSampleTTL {
		s.lag, s.err = f.lag(ctx, k)
		s.at = time.Now()
		f.mu.Lock()
		f.sample[k] = s
		f.mu.Unlock()
	}
	return s.err == nil && s.lag < f.cfg.MaxLag
}

// Search answers req from the first other layout that is caught up and
// answers; it returns the error of the last layout tried, or errNoFallback.
func (f *Fallback) Search(ctx context.Context, s *Searcher, req query.Request, from layout.Kind) (*Response, error) {
	if f == nil || f.cfg.MaxLag <= 0 {
		return nil, errNoFallback
	}
	err := errNoFallback
	for _, k := range f.kinds {
		if k == from || ctx.Err() != nil || !f.caughtUp(ctx, k) {
			continue
		}
		var resp *Response
		if resp, err = s.Search(ctx, req, k); err == nil {
			f.counter.WithLabelValues(string(from), string(k)).Inc()
			resp.FallbackFrom = string(from)
			return resp, nil
		}
	}
	return nil, err
}

var errNoFallback = errors.New("searcher: no other layout is caught up")

// unavailable reports whether a search error means the layout cannot answer
// now: OpenSearch unreachable or overloaded, shards failed, a red index, or
// the layout's indices do not exist yet (the server creates them in the
// background after it starts). A search past its own deadline is not: one
// costly request says nothing of the layout, and answering it again from
// another layout would double its cost.
func unavailable(err error) bool {
	if errors.Is(err, ErrTimeout) {
		return false
	}
	if errors.Is(err, ErrPartialResults) || errors.Is(err, ErrLayoutUnavailable) {
		return true
	}
	var se *osapi.StatusError
	if errors.As(err, &se) && se.Status == http.StatusNotFound && strings.Contains(se.Body, "index_not_found_exception") {
		return true
	}
	if errors.As(err, &se) && shardsUnreachable(se) {
		return true
	}
	_, ok := api.IsUnavailable(err)
	return ok
}

// shardCopyGone are the shard failure types that say a copy could not be
// reached or could not serve now, not that the search is wrong.
var shardCopyGone = []string{"node_not_connected_exception", "node_disconnected_exception", "connect_transport_exception",
	"no_shard_available_action_exception", "receive_timeout_transport_exception", "cluster_block_exception"}

// shardsUnreachable reports an OpenSearch 5xx "all shards failed" whose
// failures are copies that could not serve (a node just lost, the other
// copies of the hot layout not ready while a cluster manager is elected):
// the layout is unavailable for the moment, as with failed shards in a 200.
func shardsUnreachable(se *osapi.StatusError) bool {
	if se.Status < 500 || !strings.Contains(se.Body, "all shards failed") {
		return false
	}
	for _, t := range shardCopyGone {
		if strings.Contains(se.Body, t) {
			return true
		}
	}
	return false
}
