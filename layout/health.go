package layout

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/baedal/baedal/internal/osapi"
)

// IndexHealth is the health of one index behind a layout's alias.
type IndexHealth struct {
	Alias string `json:"alias"`
	Index string `json:"index,omitempty"`
	// Health is green, yellow, red, or missing (no index behind the alias).
	Health string `json:"health"`
	// Replicas is the index's current replica count (auto-expanded when
	// the setting is a range); ReplicaSetting is the configured setting.
	Replicas        int    `json:"replicas"`
	ReplicaSetting  string `json:"replica_setting"`
	ActiveShards    int    `json:"active_shards"`
	UnassignedShard int    `json:"unassigned_shards"`
}

// Health is the health of one layout: the worst of its indices'.
type Health struct {
	Layout  Kind          `json:"layout"`
	Health  string        `json:"health"`
	Indices []IndexHealth `json:"indices"`
	// Error says why the health could not be read (OpenSearch
	// unreachable); Health is then "unknown".
	Error string `json:"error,omitempty"`
	// For the hot layout: TablesServing is the number of data nodes whose
	// baedal-hot table serves searches (ready: built from the node's copy,
	// and, as the plugin checks periodically, equal to it), and Tables
	// names every other node and why (docs/hot-layout.md, "Consistency").
	// Such a node serves no hot search; the others do.
	TablesServing *int   `json:"tables_serving,omitempty"`
	Tables        string `json:"tables,omitempty"`
}

// Searchable reports whether every index has all its primaries (green or
// yellow), and for the hot layout some node's table serves: the layout
// answers complete results.
func (h Health) Searchable() bool {
	return (h.Health == "green" || h.Health == "yellow") && (h.TablesServing == nil || *h.TablesServing > 0)
}

// Health reads the health and replica count of every index of layout k
// from the cluster state (it answers while shards are unavailable). It
// never returns an error: a failed read is Health "unknown" with Error.
func (c *Config) Health(ctx context.Context, os *osapi.Client, k Kind) Health {
	h := Health{Layout: k, Health: "green"}
	var aliases map[string]struct {
		Aliases map[string]any `json:"aliases"`
	}
	names := c.Aliases(k)
	err := os.Do(ctx, http.MethodGet, "/_alias/"+strings.Join(names, ",")+"?ignore_unavailable=true", nil, &aliases)
	if err != nil && !osapi.IsStatus(err, http.StatusNotFound) {
		return Health{Layout: k, Health: "unknown", Error: err.Error()}
	}
	behind := map[string]string{} // alias -> index
	for index, a := range aliases {
		for alias := range a.Aliases {
			behind[alias] = index
		}
	}
	var indices []string
	for _, alias := range names {
		if idx, ok := behind[alias]; ok {
			indices = append(indices, idx)
		}
	}
	var health struct {
		Indices map[string]struct {
			Status     string `json:"status"`
			Replicas   int    `json:"number_of_replicas"`
			Active     int    `json:"active_shards"`
			Unassigned int    `json:"unassigned_shards"`
		} `json:"indices"`
	}
	if len(indices) > 0 {
		if err := os.Do(ctx, http.MethodGet, "/_cluster/health/"+strings.Join(indices, ",")+"?level=indices&timeout=1s", nil, &health); err != nil &&
			!osapi.IsStatus(err, http.StatusRequestTimeout) {
			return Health{Layout: k, Health: "unknown", Error: err.Error()}
		}
	}
	for _, alias := range names {
		ih := IndexHealth{Alias: alias, Index: behind[alias], Health: "missing", ReplicaSetting: c.Settings(roleOf(c, alias)).Replicas}
		if s, ok := health.Indices[ih.Index]; ok && ih.Index != "" {
			ih.Health, ih.Replicas, ih.ActiveShards, ih.UnassignedShard = s.Status, s.Replicas, s.Active, s.Unassigned
		} else if ih.Index != "" {
			ih.Health = "red" // an index the cluster health does not list has no active shard
		}
		h.Indices = append(h.Indices, ih)
		h.Health = worse(h.Health, ih.Health)
	}
	if k == Hot && h.Searchable() {
		serving := 0
		st, err := FetchHotStatus(ctx, os, c.Alias(RoleHotShops), false)
		for _, n := range st.Nodes {
			if n.Ready {
				serving++
			}
		}
		h.TablesServing, h.Tables = &serving, st.Problem()
		if err != nil && len(st.Nodes) == 0 {
			h.Tables = err.Error()
		}
	}
	return h
}

// roleOf returns the role of one of c's aliases.
func roleOf(c *Config, alias string) string { return strings.TrimPrefix(alias, c.Prefix) }

var healthOrder = []string{"green", "yellow", "red", "missing", "unknown"}

func worse(a, b string) string {
	if slices.Index(healthOrder, b) > slices.Index(healthOrder, a) {
		return b
	}
	return a
}

// String is a one-line summary: "split: yellow (baedal_shops_v1 yellow, 0 replicas of 0-1; ...)".
func (h Health) String() string {
	if h.Error != "" {
		return fmt.Sprintf("%s: %s (%s)", h.Layout, h.Health, h.Error)
	}
	var parts []string
	for _, ih := range h.Indices {
		parts = append(parts, fmt.Sprintf("%s %s, %d replicas (setting %s)", ih.Alias, ih.Health, ih.Replicas, ih.ReplicaSetting))
	}
	if h.Tables != "" {
		parts = append(parts, "tables: "+h.Tables)
	}
	return fmt.Sprintf("%s: %s (%s)", h.Layout, h.Health, strings.Join(parts, "; "))
}
