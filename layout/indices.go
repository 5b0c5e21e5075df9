package layout

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/baedal/baedal/internal/osapi"
)

// EnsureIndices creates, for every alias of the layout that does not exist
// yet, the index <alias>_v1 and points the alias at it. Existing aliases are
// left alone (a reindex may have moved them to a later generation).
func (c *Config) EnsureIndices(ctx context.Context, os *osapi.Client, k Kind) error {
	for _, role := range Roles(k) {
		alias := c.Alias(role)
		if err := os.Do(ctx, http.MethodHead, "/_alias/"+alias, nil, nil); err == nil {
			continue
		} else if !osapi.IsStatus(err, http.StatusNotFound) {
			return fmt.Errorf("layout: check alias %s: %w", alias, err)
		}
		body, err := c.IndexBody(role)
		if err != nil {
			return err
		}
		var withAlias map[string]any
		if err := json.Unmarshal(body, &withAlias); err != nil {
			return err
		}
		withAlias["aliases"] = map[string]any{alias: map[string]any{"is_write_index": true}}
		body, _ = json.Marshal(withAlias)
		index := alias + "_v1"
		if err := os.Do(ctx, http.MethodPut, "/"+index, body, nil); err != nil {
			return fmt.Errorf("layout: create index %s for alias %s: %w", index, alias, err)
		}
	}
	return nil
}

// DeleteIndices removes every index behind the layout's aliases (tests and
// benchmarks start from scratch with it).
func (c *Config) DeleteIndices(ctx context.Context, os *osapi.Client, k Kind) error {
	for _, role := range Roles(k) {
		pattern := c.Alias(role) + "_v*"
		if err := os.Do(ctx, http.MethodDelete, "/"+pattern+"?expand_wildcards=all&allow_no_indices=true", nil, nil); err != nil && !osapi.IsStatus(err, http.StatusNotFound) {
			return fmt.Errorf("layout: delete %s: %w", pattern, err)
		}
	}
	return nil
}

// HotPlugin is the OpenSearch plugin the hot layout needs on every node
// (docs/hot-layout.md), at HotPluginVersion: its tables, queries and
// messages change with its version, so a node with another version (a
// rolling upgrade under way) makes the hot layout unavailable until every
// node runs the same one.
const (
	HotPlugin        = "baedal-hot"
	HotPluginVersion = "0.5.0"
)

// HotPluginNode is one OpenSearch node: its name and the versions of the
// baedal-hot plugin it lists (none, or one).
type HotPluginNode struct {
	Name     string
	Versions []string
}

// HotPluginNodes lists every node of the cluster, by node id, with the
// baedal-hot versions it runs (GET /_nodes/plugins).
func HotPluginNodes(ctx context.Context, os *osapi.Client) (map[string]HotPluginNode, error) {
	var resp struct {
		Nodes map[string]struct {
			Name    string `json:"name"`
			Plugins []struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"plugins"`
		} `json:"nodes"`
	}
	if err := os.Do(ctx, http.MethodGet, "/_nodes/plugins?filter_path=nodes.*.name,nodes.*.plugins.name,nodes.*.plugins.version", nil, &resp); err != nil {
		return nil, fmt.Errorf("layout: list the plugins of the OpenSearch nodes: %w", err)
	}
	out := make(map[string]HotPluginNode, len(resp.Nodes))
	for id, n := range resp.Nodes {
		node := HotPluginNode{Name: n.Name}
		for _, p := range n.Plugins {
			if p.Name == HotPlugin {
				node.Versions = append(node.Versions, p.Version)
			}
		}
		out[id] = node
	}
	return out, nil
}

// NodesWithoutHotPlugin returns, for each node of the cluster that lacks the
// baedal-hot plugin at HotPluginVersion, its name and what it has instead
// ("no baedal-hot", or "baedal-hot 0.2.0"): when it is not empty, the hot
// layout cannot run and the other layouts are unaffected.
func NodesWithoutHotPlugin(ctx context.Context, os *osapi.Client) ([]string, error) {
	nodes, err := HotPluginNodes(ctx, os)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, n := range nodes {
		if has := hotPluginHeld(n.Versions); has != "" {
			missing = append(missing, n.Name+" ("+has+")")
		}
	}
	slices.Sort(missing)
	return missing, nil
}

// hotPluginHeld says what a node with these baedal-hot versions has instead
// of exactly the baedal-hot plugin at HotPluginVersion, or "" when it has
// that.
func hotPluginHeld(versions []string) string {
	switch {
	case len(versions) == 0:
		return "no " + HotPlugin
	case len(versions) > 1 || versions[0] != HotPluginVersion:
		return HotPlugin + " " + strings.Join(versions, ", ")
	}
	return ""
}

// RunnableKinds returns the layouts the cluster can run, the baseline first:
// every layout, but hot only when every node has the baedal-hot plugin. For
// each layout it cannot run, unavailable says why.
func RunnableKinds(ctx context.Context, os *osapi.Client) (kinds []Kind, unavailable map[Kind]string, err error) {
	missing, err := NodesWithoutHotPlugin(ctx, os)
	if err != nil {
		return nil, nil, err
	}
	unavailable = map[Kind]string{}
	for _, k := range Kinds() {
		if k == Hot && len(missing) > 0 {
			unavailable[k] = fmt.Sprintf("the OpenSearch nodes %s lack the %s plugin %s (see opensearch/README.md)", strings.Join(missing, ", "), HotPlugin, HotPluginVersion)
			continue
		}
		kinds = append(kinds, k)
	}
	return kinds, unavailable, nil
}
