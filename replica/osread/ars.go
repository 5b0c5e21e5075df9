package osread

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// ARSSetting is OpenSearch's dynamic cluster setting for adaptive replica
// selection of shard copies (C3 inside the cluster, on by default).
const ARSSetting = "cluster.routing.use_adaptive_replica_selection"

// ARSNode is one node's view of adaptive replica selection: for every node
// it sends shard requests to, the C3 statistics it keeps (from
// _nodes/stats/adaptive_selection).
type ARSNode struct {
	Node    string         `json:"node"`
	Targets []ARSNodeStats `json:"targets"`
}

// ARSNodeStats are the statistics one node keeps about a target node.
type ARSNodeStats struct {
	Target           string  `json:"target"`
	OutgoingSearches int     `json:"outgoing_searches"`
	AvgQueueSize     float64 `json:"avg_queue_size"`
	AvgServiceTimeNS float64 `json:"avg_service_time_ns"`
	AvgResponseNS    float64 `json:"avg_response_time_ns"`
	Rank             float64 `json:"rank"`
}

// ARSReport is the state of adaptive replica selection in a cluster.
type ARSReport struct {
	Enabled bool      `json:"enabled"`
	Nodes   []ARSNode `json:"nodes"`
}

// SetAdaptiveReplicaSelection turns OpenSearch's shard-copy ARS on or off
// for the whole cluster (a persistent dynamic setting) through baseURL.
func SetAdaptiveReplicaSelection(ctx context.Context, client *http.Client, baseURL string, on bool) error {
	body := fmt.Sprintf(`{"persistent":{%q:%t}}`, ARSSetting, on)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, strings.TrimRight(baseURL, "/")+"/_cluster/settings", strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("osread: set %s=%t: %w", ARSSetting, on, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("osread: set %s=%t: %w", ARSSetting, on, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("osread: set %s=%t: status %d: %s", ARSSetting, on, resp.StatusCode, raw)
	}
	return nil
}

// GetAdaptiveReplicaSelection reports whether ARS is on (the effective value:
// persistent, transient or default) and each node's ARS statistics.
func GetAdaptiveReplicaSelection(ctx context.Context, client *http.Client, baseURL string) (ARSReport, error) {
	base := strings.TrimRight(baseURL, "/")
	var settings map[string]map[string]any
	if err := getJSON(ctx, client, base+"/_cluster/settings?include_defaults=true&flat_settings=true", &settings); err != nil {
		return ARSReport{}, err
	}
	var rep ARSReport
	enabled := true                                                         // OpenSearch's default is on
	for _, scope := range []string{"defaults", "persistent", "transient"} { // later wins
		if v, ok := settings[scope][ARSSetting]; ok {
			b, err := strconv.ParseBool(fmt.Sprint(v))
			if err != nil {
				return rep, fmt.Errorf("osread: %s setting %s: got %v, want true or false", scope, ARSSetting, v)
			}
			enabled = b
		}
	}
	rep.Enabled = enabled

	var stats struct {
		Nodes map[string]struct {
			Name              string `json:"name"`
			AdaptiveSelection map[string]struct {
				OutgoingSearches int     `json:"outgoing_searches"`
				AvgQueueSize     float64 `json:"avg_queue_size"`
				AvgServiceTimeNS float64 `json:"avg_service_time_ns"`
				AvgResponseNS    float64 `json:"avg_response_time_ns"`
				Rank             any     `json:"rank"` // a string in some versions
			} `json:"adaptive_selection"`
		} `json:"nodes"`
	}
	if err := getJSON(ctx, client, base+"/_nodes/stats/adaptive_selection", &stats); err != nil {
		return rep, err
	}
	names := map[string]string{}
	for id, n := range stats.Nodes {
		names[id] = n.Name
	}
	for id, n := range stats.Nodes {
		node := ARSNode{Node: n.Name}
		for target, s := range n.AdaptiveSelection {
			rank, _ := strconv.ParseFloat(fmt.Sprint(s.Rank), 64)
			name := names[target]
			if name == "" {
				name = target
			}
			node.Targets = append(node.Targets, ARSNodeStats{
				Target: name, OutgoingSearches: s.OutgoingSearches, AvgQueueSize: s.AvgQueueSize,
				AvgServiceTimeNS: s.AvgServiceTimeNS, AvgResponseNS: s.AvgResponseNS, Rank: rank,
			})
		}
		sort.Slice(node.Targets, func(i, j int) bool { return node.Targets[i].Target < node.Targets[j].Target })
		if node.Node == "" {
			node.Node = id
		}
		rep.Nodes = append(rep.Nodes, node)
	}
	sort.Slice(rep.Nodes, func(i, j int) bool { return rep.Nodes[i].Node < rep.Nodes[j].Node })
	return rep, nil
}

func getJSON(ctx context.Context, client *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("osread: GET %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("osread: GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("osread: GET %s: status %d: %s", url, resp.StatusCode, raw)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(v); err != nil {
		return fmt.Errorf("osread: GET %s: decode: %w", url, err)
	}
	return nil
}
