package layout

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/baedal/baedal/internal/osapi"
)

// HotStatus is the baedal-hot plugin's status of the table of one shop-head
// index: every data node's table, and, when checked, what a comparison with
// the node's own copy of the index found (docs/hot-layout.md, "_status").
type HotStatus struct {
	Table string `json:"table"`
	Ready bool   `json:"ready"`
	// Agrees is set only by a checked status: every node's table equals its
	// copy.
	Agrees *bool                    `json:"agrees,omitempty"`
	Nodes  map[string]HotNodeStatus `json:"nodes"`
	// Failures are the nodes that did not answer.
	Failures []struct {
		Node   string `json:"node"`
		Reason string `json:"reason"`
	} `json:"failures"`
}

// HotNodeStatus is one data node's table.
type HotNodeStatus struct {
	HasCopy       bool   `json:"has_copy"`
	Ready         bool   `json:"ready"`
	Reason        string `json:"reason"`
	Shops         int64  `json:"shops"`
	Tombstones    int64  `json:"tombstones"`
	Bytes         int64  `json:"bytes"`
	Rebuilds      int64  `json:"rebuilds"`
	LastRebuildMs int64  `json:"last_rebuild_ms"`
	// Set by a checked status: the digest of the table's live rows and of
	// the copy's live documents, the copy's documents (tombstones
	// included), and the rows on which they still disagreed after a second
	// look.
	Digest         string `json:"digest"`
	ShardDigest    string `json:"shard_digest"`
	ShardDocuments int64  `json:"shard_documents"`
	Disagreeing    *int   `json:"disagreeing"`
}

// HotStatusPath returns the REST path of the status of the table of a
// shop-head index (or alias); check asks every node to compare its table
// with its copy (one scan of the copy per node).
func HotStatusPath(shopIndex string, check bool) string {
	p := "/_baedal/hot/" + shopIndex + "/_status"
	if !check {
		p += "?check=false"
	}
	return p
}

// FetchHotStatus reads the status of the hot table of a shop-head index. A
// node that did not answer makes the plugin answer 503 with the same body,
// which FetchHotStatus returns with the error.
func FetchHotStatus(ctx context.Context, os *osapi.Client, shopIndex string, check bool) (HotStatus, error) {
	var st HotStatus
	err := os.DoAnyStatus(ctx, http.MethodGet, HotStatusPath(shopIndex, check), nil, &st)
	if err != nil {
		return st, fmt.Errorf("layout: status of the hot table of %s: %w", shopIndex, err)
	}
	return st, nil
}

// Problem says what is wrong with the tables, naming the nodes, or "" when
// every data node's table is ready (and, for a checked status, equal to its
// copy).
func (st HotStatus) Problem() string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(st.Nodes)) {
		n := st.Nodes[name]
		switch {
		case !n.Ready:
			out = append(out, fmt.Sprintf("node %s: not ready (%s)", name, n.Reason))
		case n.Disagreeing != nil && *n.Disagreeing > 0:
			out = append(out, fmt.Sprintf("node %s: its table disagrees with its copy on %d shops (digest %s, copy %s); it is rebuilding", name, *n.Disagreeing, n.Digest, n.ShardDigest))
		}
	}
	for _, f := range st.Failures {
		out = append(out, fmt.Sprintf("node %s: %s", f.Node, f.Reason))
	}
	if len(st.Nodes) == 0 && len(out) == 0 {
		out = append(out, "no data node holds the shop-head index")
	}
	return strings.Join(out, "; ")
}
