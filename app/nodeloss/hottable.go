package nodeloss

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
)

// HotTableCheck is one node's baedal-hot table at the end of a run, beside
// the hot rows the accepted events describe and those the shop index holds
// (the table is a cache of the shop index, rebuilt on the node's restart).
type HotTableCheck struct {
	Node   string `json:"node"`
	Ready  bool   `json:"ready"`
	Shops  int    `json:"shops"`
	Digest string `json:"digest"`
	// WantShops and WantDigest are the live shops of the accepted events'
	// states; ShopIndexDigest is the digest of the shop index's documents.
	WantShops       int    `json:"want_shops"`
	WantDigest      string `json:"want_digest"`
	ShopIndexDigest string `json:"shop_index_digest"`
}

// Equal reports whether the node's table is ready and holds exactly the
// events' live rows, and the shop index agrees with both.
func (c HotTableCheck) Equal() bool {
	return c.Ready && c.Shops == c.WantShops && c.Digest == c.WantDigest && c.ShopIndexDigest == c.WantDigest
}

// checkHotTables compares every node's table (the plugin's `_status`: live
// rows and their digest, indexer.HotTableDigest) with the states the
// accepted events describe and with the shop index's documents, until they
// agree or timeout passes (a restarted node may still be rebuilding), and
// returns the last comparison: one check per node that answered (a node
// that did not is missing from it, and the caller counts it).
func checkHotTables(ctx context.Context, osc *osapi.Client, cfg indexer.Config, nodes int, states map[int64]*catalog.ShopState, timeout time.Duration) ([]HotTableCheck, error) {
	ids := slices.Sorted(maps.Keys(states))
	var live []*catalog.ShopState
	for _, id := range ids {
		if s := states[id]; !s.Deleted && s.Version > 0 {
			live = append(live, s)
		}
	}
	want := indexer.HotTableDigest(live)
	ix, err := indexer.New(cfg, layout.Hot, osc, nil, nil)
	if err != nil {
		return nil, err
	}
	path := indexer.HotTablePath(cfg.Layout.Alias(layout.RoleHotShops), "_status")
	var checks []HotTableCheck
	for deadline := time.Now().Add(timeout); ; time.Sleep(500 * time.Millisecond) {
		held, err := ix.Fetch(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("nodeloss: read the hot shop index: %w", err)
		}
		var indexed []*catalog.ShopState
		for _, id := range ids {
			if s := held[id].Aggregate(layout.Hot); !s.Deleted && s.Version > 0 {
				indexed = append(indexed, &s)
			}
		}
		var status struct {
			Nodes map[string]struct {
				Ready  bool   `json:"ready"`
				Shops  int    `json:"shops"`
				Digest string `json:"digest"`
			} `json:"nodes"`
		}
		// A node still rebuilding makes `_status` a 503: retried.
		if err := osc.Do(ctx, http.MethodGet, path, nil, &status); err != nil && !osapi.Retryable(err) {
			return nil, fmt.Errorf("nodeloss: %s: %w", path, err)
		}
		checks = nil
		for _, node := range slices.Sorted(maps.Keys(status.Nodes)) {
			n := status.Nodes[node]
			checks = append(checks, HotTableCheck{Node: node, Ready: n.Ready, Shops: n.Shops, Digest: n.Digest,
				WantShops: len(live), WantDigest: want, ShopIndexDigest: indexer.HotTableDigest(indexed)})
		}
		done := len(checks) == nodes && !slices.ContainsFunc(checks, func(c HotTableCheck) bool { return !c.Equal() })
		if done || time.Now().After(deadline) || ctx.Err() != nil {
			return checks, nil
		}
	}
}
