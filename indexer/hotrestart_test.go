package indexer

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/layout"
)

// refuseShopBulks is a transport in front of the real OpenSearch that, while
// on, answers every _bulk naming the shop index with a 503 of its own
// instead of sending it (a node that went away mid-batch); every other
// request goes through.
type refuseShopBulks struct {
	next             http.RoundTripper
	shopIndex        string
	on               atomic.Bool
	refused, updates atomic.Int64
}

func (r *refuseShopBulks) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Path, "/_update") && strings.HasPrefix(req.URL.Path, "/_baedal/hot/") {
		r.updates.Add(1)
	}
	if r.on.Load() && strings.HasSuffix(req.URL.Path, "/_bulk") && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		if bytes.Contains(body, []byte(`"_index":"`+r.shopIndex+`"`)) {
			r.refused.Add(1)
			return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable",
				Header: http.Header{"Content-Type": {"application/json"}}, Request: req, ProtoMajor: 1, ProtoMinor: 1,
				Body: io.NopCloser(strings.NewReader(`{"error":{"type":"injected","reason":"shop index bulk refused by the test"},"status":503}`))}, nil
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return r.next.RoundTrip(req)
}

// TestHotRowsSurviveATableLostBeforeTheirHeads reproduces what a SIGKILLed
// one-node cluster did to the table (app/nodeloss, CI 2026-11-26: a shop's
// row stayed one version behind its shop document for good): a batch's rows
// reach the table, its heads' bulk fails, the table is lost and rebuilt from
// the shop index (here: the shop index closed and opened again, which drops
// the table as a restart does), and only then are the heads written. The
// indexer must send the rows again after a heads' bulk that needed a retry,
// so the table ends equal to the events.
func TestHotRowsSurviveATableLostBeforeTheirHeads(t *testing.T) {
	e := newTestEnv(t)
	if !slices.Contains(stacktest.Layouts(t, e.os), layout.Hot) {
		t.Skip("the cluster lacks the baedal-hot plugin (fails in CI)")
	}
	ctx := context.Background()
	t.Cleanup(func() { _ = e.cfg.Layout.DeleteIndices(context.Background(), e.os, layout.Hot) })
	ix := e.indexer(t, layout.Hot)
	const seed, numShops = 21, 40
	load := initialLoad(seed, numShops)
	if _, err := ix.Apply(ctx, load); err != nil {
		t.Fatal(err)
	}

	shopAlias := e.cfg.Layout.Alias(layout.RoleHotShops)
	var concrete map[string]any
	if err := e.os.Do(ctx, http.MethodGet, "/_alias/"+shopAlias, nil, &concrete); err != nil || len(concrete) != 1 {
		t.Fatalf("alias %s: %v %v", shopAlias, concrete, err)
	}
	var shopIndex string
	for name := range concrete {
		shopIndex = name
	}
	cfg := backend.Defaults().OpenSearch
	cfg.URLs = e.st.OpenSearchURLs
	rt, err := backend.NewOpenSearchTransport(cfg)
	if err != nil {
		t.Fatal(err)
	}
	faults := &refuseShopBulks{next: rt, shopIndex: shopAlias}
	osc, err := backend.OpenOpenSearchVia(cfg, faults)
	if err != nil {
		t.Fatal(err)
	}
	faulty, err := New(e.cfg, layout.Hot, osapi.New(osc), nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	events := streamEvents(seed, numShops, 300)
	faults.on.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := faulty.Apply(ctx, events)
		done <- err
	}()
	waitFor(t, 30*time.Second, "a refused heads' bulk after the table update", func() bool {
		return faults.refused.Load() >= 2 && faults.updates.Load() >= 1
	})
	updatesBefore := faults.updates.Load()
	// Drop the table and rebuild it from the shop index, which does not hold
	// the batch's heads yet.
	for _, path := range []string{"/" + shopIndex + "/_close", "/" + shopIndex + "/_open?wait_for_active_shards=1"} {
		if err := e.os.Do(ctx, http.MethodPost, path, nil, nil); err != nil {
			faults.on.Store(false)
			t.Fatal(err)
		}
	}
	waitFor(t, 60*time.Second, "the rebuilt table", func() bool {
		var status struct {
			Ready bool `json:"ready"`
		}
		err := e.os.Do(ctx, http.MethodGet, HotTablePath(shopAlias, "_status"), nil, &status)
		return err == nil && status.Ready
	})
	faults.on.Store(false)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if faults.updates.Load() == updatesBefore {
		t.Errorf("no table update after the heads' bulk was retried (%d refused)", faults.refused.Load())
	}
	if bad := compareLayout(t, e.os, &e.cfg.Layout, layout.Hot, expectedShops(t, seed, numShops, events)); bad > 0 {
		t.Errorf("%d shops differ from the events after the table was lost before their heads", bad)
	}
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !ok(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %s", what, d)
		}
	}
}
