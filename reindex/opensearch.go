package reindex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
)

// aliasIndices returns the concrete indices an alias points at.
func aliasIndices(ctx context.Context, os *osapi.Client, alias string) ([]string, error) {
	var resp map[string]json.RawMessage
	err := os.Do(ctx, http.MethodGet, "/_alias/"+url.PathEscape(alias), nil, &resp)
	if osapi.IsStatus(err, http.StatusNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reindex: resolve alias %s: %w", alias, err)
	}
	out := make([]string, 0, len(resp))
	for idx := range resp {
		out = append(out, idx)
	}
	sort.Strings(out)
	return out, nil
}

// aliasTarget returns the one index an alias points at.
func aliasTarget(ctx context.Context, os *osapi.Client, alias string) (string, error) {
	idx, err := aliasIndices(ctx, os, alias)
	if err != nil {
		return "", err
	}
	if len(idx) != 1 {
		return "", fmt.Errorf("reindex: alias %s points at %d indices %v, want exactly 1", alias, len(idx), idx)
	}
	return idx[0], nil
}

var generationPattern = regexp.MustCompile(`_v([0-9]+)$`)

// nextGeneration returns the name of the next concrete index of an alias:
// <alias>_v<max existing generation + 1>.
func nextGeneration(ctx context.Context, os *osapi.Client, alias string) (string, int, error) {
	var rows []struct {
		Index string `json:"index"`
	}
	err := os.Do(ctx, http.MethodGet, "/_cat/indices/"+alias+"_v*?format=json&h=index&expand_wildcards=all", nil, &rows)
	if err != nil && !osapi.IsStatus(err, http.StatusNotFound) {
		return "", 0, fmt.Errorf("reindex: list indices of %s: %w", alias, err)
	}
	gen := 0
	for _, r := range rows {
		if !strings.HasPrefix(r.Index, alias+"_v") {
			continue
		}
		if m := generationPattern.FindStringSubmatch(r.Index); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n > gen {
				gen = n
			}
		}
	}
	gen++
	return fmt.Sprintf("%s_v%d", alias, gen), gen, nil
}

// indexSettings are the settings of an index the job reads back.
type indexSettings struct {
	Shards          int
	Replicas        int
	RefreshInterval string
}

func getIndexSettings(ctx context.Context, os *osapi.Client, index string) (indexSettings, error) {
	var resp map[string]struct {
		Settings struct {
			Index struct {
				Shards   string `json:"number_of_shards"`
				Replicas string `json:"number_of_replicas"`
				Refresh  string `json:"refresh_interval"`
			} `json:"index"`
		} `json:"settings"`
	}
	if err := os.Do(ctx, http.MethodGet, "/"+index+"/_settings?include_defaults=true&flat_settings=false", nil, &resp); err != nil {
		return indexSettings{}, fmt.Errorf("reindex: settings of %s: %w", index, err)
	}
	r, ok := resp[index]
	if !ok {
		return indexSettings{}, fmt.Errorf("reindex: settings of %s: index missing from the response", index)
	}
	var s indexSettings
	s.Shards, _ = strconv.Atoi(r.Settings.Index.Shards)
	s.Replicas, _ = strconv.Atoi(r.Settings.Index.Replicas)
	s.RefreshInterval = r.Settings.Index.Refresh
	if s.RefreshInterval == "" {
		s.RefreshInterval = "1s"
	}
	return s, nil
}

func indexUUID(ctx context.Context, os *osapi.Client, index string) (string, error) {
	settings, err := flatSettings(ctx, os, index, "index.uuid")
	if err != nil {
		return "", err
	}
	uuid := settings["index.uuid"]
	if uuid == "" {
		return "", fmt.Errorf("reindex: uuid of %s: not in the response", index)
	}
	return uuid, nil
}

// flatSettings reads the settings of index that names selects (a
// comma-separated list, wildcards allowed), keyed by their flat names
// ("index.uuid").
func flatSettings(ctx context.Context, os *osapi.Client, index, names string) (map[string]string, error) {
	var resp map[string]struct {
		Settings map[string]string `json:"settings"`
	}
	if err := os.Do(ctx, http.MethodGet, "/"+index+"/_settings/"+names+"?flat_settings=true", nil, &resp); err != nil {
		return nil, fmt.Errorf("reindex: settings %s of %s: %w", names, index, err)
	}
	return resp[index].Settings, nil
}

func indexExists(ctx context.Context, os *osapi.Client, index string) (bool, error) {
	err := os.Do(ctx, http.MethodHead, "/"+index, nil, nil)
	if err == nil {
		return true, nil
	}
	if osapi.IsStatus(err, http.StatusNotFound) {
		return false, nil
	}
	return false, fmt.Errorf("reindex: check index %s: %w", index, err)
}

// targetBody returns the create body of the target: the given body (or the
// default), with shards and copy-time replicas, refresh and translog
// durability set. The copy and the catch-up write with a "request" translog
// (their progress is persisted after each write, so a write must be durable
// when it answers); afterSwap sets the body's own durability back
// (finalDurability) once the live indexer, which holds its
// acknowledgements until a flush, is the only writer.
func targetBody(body []byte, shards, replicas int, refresh string) ([]byte, error) {
	b, index, err := bodyIndexSettings(body)
	if err != nil {
		return nil, err
	}
	if shards > 0 {
		index["number_of_shards"] = shards
	}
	// The layout's body may auto-expand replicas; during the copy the
	// count is fixed (restore sets the configured setting back).
	index["number_of_replicas"] = replicas
	index["auto_expand_replicas"] = "false"
	index["refresh_interval"] = refresh
	if translog, ok := index["translog"].(map[string]any); ok {
		delete(translog, "durability")
	}
	index["translog.durability"] = layout.DurabilityRequest
	delete(b, "aliases")
	return json.Marshal(b)
}

// finalDurability returns the translog durability an index body asks for
// ("" when it does not).
func finalDurability(body []byte) (string, error) {
	_, index, err := bodyIndexSettings(body)
	if err != nil {
		return "", err
	}
	if d, ok := index["translog.durability"].(string); ok {
		return d, nil
	}
	if translog, ok := index["translog"].(map[string]any); ok {
		d, _ := translog["durability"].(string)
		return d, nil
	}
	return "", nil
}

// bodyIndexSettings parses an index body and returns it with its
// settings.index map, into which it moved the flat keys of settings
// ("index.number_of_shards", "number_of_shards"), which would clash with
// the nested ones.
func bodyIndexSettings(body []byte) (b, index map[string]any, err error) {
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, nil, fmt.Errorf("reindex: index body: %w", err)
	}
	settings, _ := b["settings"].(map[string]any)
	if settings == nil {
		settings = map[string]any{}
	}
	index, _ = settings["index"].(map[string]any)
	if index == nil {
		index = map[string]any{}
	}
	for k, v := range settings {
		if k == "index" {
			continue
		}
		index[strings.TrimPrefix(k, "index.")] = v
		delete(settings, k)
	}
	settings["index"] = index
	b["settings"] = settings
	return b, index, nil
}

func createIndex(ctx context.Context, os *osapi.Client, index string, body []byte) error {
	err := os.Do(ctx, http.MethodPut, "/"+index, body, nil)
	if err != nil && osapi.IsStatus(err, http.StatusBadRequest) && strings.Contains(err.Error(), "resource_already_exists_exception") {
		return nil // created before a crash
	}
	if err != nil {
		return fmt.Errorf("reindex: create target %s: %w", index, err)
	}
	return nil
}

func putSettings(ctx context.Context, os *osapi.Client, index string, settings map[string]any) error {
	body, _ := json.Marshal(map[string]any{"index": settings})
	if err := os.Do(ctx, http.MethodPut, "/"+index+"/_settings", body, nil); err != nil {
		return fmt.Errorf("reindex: set %v on %s: %w", settings, index, err)
	}
	return nil
}

// setWriteFreeze adds or lifts index.blocks.read_only_allow_delete: index
// actions are answered 429 (the indexer retries them), deletes pass.
func setWriteFreeze(ctx context.Context, os *osapi.Client, index string, on bool) error {
	var v any // null lifts the block (OpenSearch accepts only that while it is set)
	if on {
		v = true
	}
	body, _ := json.Marshal(map[string]any{"index.blocks.read_only_allow_delete": v})
	if err := os.Do(ctx, http.MethodPut, "/"+index+"/_settings", body, nil); err != nil {
		if !on && osapi.IsStatus(err, http.StatusNotFound) {
			return nil
		}
		return fmt.Errorf("reindex: set write freeze %v on %s: %w", on, index, err)
	}
	return nil
}

// waitGreen waits until the index is green.
func waitGreen(ctx context.Context, os *osapi.Client, index string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var resp struct {
			Status   string `json:"status"`
			TimedOut bool   `json:"timed_out"`
		}
		err := os.Do(ctx, http.MethodGet, "/_cluster/health/"+index+"?wait_for_status=green&timeout=10s", nil, &resp)
		if err == nil && resp.Status == "green" {
			return nil
		}
		if err != nil && !osapi.IsStatus(err, http.StatusRequestTimeout) && !osapi.Retryable(err) {
			return fmt.Errorf("reindex: wait for %s to be green: %w", index, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("reindex: %s not green after %s (status %q)", index, timeout, resp.Status)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// swapAlias moves alias from one index to another in one _aliases request.
// The remove action fails (and with it the whole request) unless the alias
// is on from, so a concurrent change is never overwritten.
func swapAlias(ctx context.Context, os *osapi.Client, alias, from, to string) error {
	body, _ := json.Marshal(map[string]any{"actions": []any{
		map[string]any{"remove": map[string]any{"index": from, "alias": alias, "must_exist": true}},
		map[string]any{"add": map[string]any{"index": to, "alias": alias, "is_write_index": true}},
	}})
	if err := os.Do(ctx, http.MethodPost, "/_aliases", body, nil); err != nil {
		return fmt.Errorf("reindex: swap alias %s from %s to %s: %w", alias, from, to, err)
	}
	return nil
}

// pointAliases makes each alias point at exactly the given index (catch-up
// aliases), in one request.
// Removals name the alias's current concrete indices: an "index": "*"
// wildcard resolves every index of the cluster and fails with 404 when any
// other index is deleted meanwhile.
func pointAliases(ctx context.Context, os *osapi.Client, aliasToIndex map[string]string) error {
	var actions []any
	for alias, index := range aliasToIndex {
		current, err := aliasIndices(ctx, os, alias)
		if err != nil {
			return err
		}
		for _, old := range current {
			if old != index {
				actions = append(actions, map[string]any{"remove": map[string]any{"index": old, "alias": alias, "must_exist": false}})
			}
		}
		actions = append(actions, map[string]any{"add": map[string]any{"index": index, "alias": alias, "is_write_index": true}})
	}
	body, _ := json.Marshal(map[string]any{"actions": actions})
	if err := os.Do(ctx, http.MethodPost, "/_aliases", body, nil); err != nil {
		return fmt.Errorf("reindex: point catch-up aliases %v: %w", aliasToIndex, err)
	}
	return nil
}

func removeAliases(ctx context.Context, os *osapi.Client, aliases []string) error {
	var actions []any
	for _, a := range aliases {
		current, err := aliasIndices(ctx, os, a)
		if err != nil {
			return err
		}
		for _, idx := range current {
			actions = append(actions, map[string]any{"remove": map[string]any{"index": idx, "alias": a, "must_exist": false}})
		}
	}
	if len(actions) == 0 {
		return nil
	}
	body, _ := json.Marshal(map[string]any{"actions": actions})
	if err := os.Do(ctx, http.MethodPost, "/_aliases", body, nil); err != nil && !osapi.IsStatus(err, http.StatusNotFound) {
		return fmt.Errorf("reindex: remove aliases %v: %w", aliases, err)
	}
	return nil
}

func deleteIndex(ctx context.Context, os *osapi.Client, index string) error {
	err := os.Do(ctx, http.MethodDelete, "/"+index, nil, nil)
	if err != nil && !osapi.IsStatus(err, http.StatusNotFound) {
		return fmt.Errorf("reindex: delete index %s: %w", index, err)
	}
	return nil
}

// startCopy starts _reindex as a task and returns its id.
func startCopy(ctx context.Context, os *osapi.Client, source, target string, o Options) (string, error) {
	slices, _ := ParseSlices(o.Slices)
	q := url.Values{}
	q.Set("wait_for_completion", "false")
	q.Set("refresh", "false")
	q.Set("requests_per_second", formatRate(o.RequestsPerSecond))
	if slices == 0 {
		q.Set("slices", "auto")
	} else {
		q.Set("slices", strconv.Itoa(slices))
	}
	body, _ := json.Marshal(map[string]any{
		"conflicts": "proceed",
		"source":    map[string]any{"index": source, "size": o.BatchSize},
		"dest":      map[string]any{"index": target, "version_type": "external"},
	})
	var resp struct {
		Task string `json:"task"`
	}
	if err := os.Do(ctx, http.MethodPost, "/_reindex?"+q.Encode(), body, &resp); err != nil {
		return "", fmt.Errorf("reindex: start copy %s → %s: %w", source, target, err)
	}
	if resp.Task == "" {
		return "", fmt.Errorf("reindex: start copy %s → %s: no task id in the response", source, target)
	}
	return resp.Task, nil
}

// copyDescription is how OpenSearch describes a reindex task.
func copyDescription(source, target string) string {
	return "reindex from [" + source + "] to [" + target + "]"
}

// findCopyTask returns the id of a running top-level reindex task from
// source to target, or "".
func findCopyTask(ctx context.Context, os *osapi.Client, source, target string) (string, error) {
	var resp struct {
		Nodes map[string]struct {
			Tasks map[string]struct {
				Description  string `json:"description"`
				ParentTaskID string `json:"parent_task_id"`
			} `json:"tasks"`
		} `json:"nodes"`
	}
	if err := os.Do(ctx, http.MethodGet, "/_tasks?actions=indices:data/write/reindex&detailed=true", nil, &resp); err != nil {
		return "", fmt.Errorf("reindex: list reindex tasks: %w", err)
	}
	want := copyDescription(source, target)
	for _, n := range resp.Nodes {
		for id, t := range n.Tasks {
			if t.ParentTaskID == "" && t.Description == want {
				return id, nil
			}
		}
	}
	return "", nil
}

// CopyStatus is the state of the copy task, from GET _tasks/<id>.
type CopyStatus struct {
	Completed         bool     `json:"completed"`
	Total             int64    `json:"total"`
	Created           int64    `json:"created"`
	Updated           int64    `json:"updated"`
	Deleted           int64    `json:"deleted"`
	Batches           int64    `json:"batches"`
	VersionConflicts  int64    `json:"version_conflicts"` // "skipped newer": the target had a newer version
	Noops             int64    `json:"noops"`
	RequestsPerSecond float64  `json:"requests_per_second"`
	RunningSeconds    float64  `json:"running_seconds"`
	Failures          int      `json:"failures"`
	FailureSamples    []string `json:"failure_samples,omitempty"`
	Error             string   `json:"error,omitempty"`
	Cancelled         bool     `json:"cancelled,omitempty"`
}

// Done is the number of source documents the copy has handled.
func (s CopyStatus) Done() int64 {
	return s.Created + s.Updated + s.Deleted + s.VersionConflicts + s.Noops
}

// Fraction is Done/Total in 0..1 (0 while the total is unknown).
func (s CopyStatus) Fraction() float64 {
	if s.Total <= 0 {
		if s.Completed {
			return 1
		}
		return 0
	}
	return max(0, min(1, float64(s.Done())/float64(s.Total)))
}

// ETA estimates the time left from the rate so far; 0 when unknown.
func (s CopyStatus) ETA() time.Duration {
	done := s.Done()
	if s.Completed || done <= 0 || s.RunningSeconds <= 0 || s.Total <= done {
		return 0
	}
	rate := float64(done) / s.RunningSeconds
	secs := float64(s.Total-done) / rate
	if !(secs < maxETA.Seconds()) {
		return maxETA
	}
	return time.Duration(secs * float64(time.Second))
}

// maxETA caps the estimate (a paused copy has an absurd one).
const maxETA = 1000 * time.Hour

type taskCounts struct {
	Total             int64   `json:"total"`
	Created           int64   `json:"created"`
	Updated           int64   `json:"updated"`
	Deleted           int64   `json:"deleted"`
	Batches           int64   `json:"batches"`
	VersionConflicts  int64   `json:"version_conflicts"`
	Noops             int64   `json:"noops"`
	RequestsPerSecond float64 `json:"requests_per_second"`
}

type taskResponse struct {
	Completed bool `json:"completed"`
	Task      struct {
		Status           taskCounts `json:"status"`
		RunningTimeNanos int64      `json:"running_time_in_nanos"`
		Cancelled        bool       `json:"cancelled"`
	} `json:"task"`
	Response *struct {
		taskCounts
		Failures []json.RawMessage `json:"failures"`
	} `json:"response"`
	Error json.RawMessage `json:"error"`
}

// parseTask decodes a GET _tasks/<id> answer.
func parseTask(raw []byte) (CopyStatus, error) {
	var t taskResponse
	if err := json.Unmarshal(raw, &t); err != nil {
		return CopyStatus{}, fmt.Errorf("reindex: decode task: %w", err)
	}
	c := t.Task.Status
	if t.Response != nil {
		c = t.Response.taskCounts
	}
	s := CopyStatus{
		Completed: t.Completed, Total: c.Total, Created: c.Created, Updated: c.Updated, Deleted: c.Deleted,
		Batches: c.Batches, VersionConflicts: c.VersionConflicts, Noops: c.Noops, RequestsPerSecond: c.RequestsPerSecond,
		RunningSeconds: float64(t.Task.RunningTimeNanos) / 1e9, Cancelled: t.Task.Cancelled,
	}
	if len(t.Error) > 0 && string(t.Error) != "null" {
		s.Error = truncate(string(t.Error), 500)
	}
	if t.Response != nil {
		s.Failures = len(t.Response.Failures)
		for i, f := range t.Response.Failures {
			if i == 5 {
				break
			}
			s.FailureSamples = append(s.FailureSamples, truncate(string(f), 300))
		}
	}
	return s, nil
}

func getTask(ctx context.Context, os *osapi.Client, taskID string) (CopyStatus, error) {
	var raw []byte
	if err := os.Do(ctx, http.MethodGet, "/_tasks/"+url.PathEscape(taskID), nil, &raw); err != nil {
		return CopyStatus{}, fmt.Errorf("reindex: get copy task %s: %w", taskID, err)
	}
	return parseTask(raw)
}

func rethrottle(ctx context.Context, os *osapi.Client, taskID string, rps float64) error {
	path := "/_reindex/" + url.PathEscape(taskID) + "/_rethrottle?requests_per_second=" + formatRate(rps)
	if err := os.Do(ctx, http.MethodPost, path, nil, nil); err != nil {
		return fmt.Errorf("reindex: rethrottle task %s to %s docs/s: %w", taskID, formatRate(rps), err)
	}
	return nil
}

func cancelTask(ctx context.Context, os *osapi.Client, taskID string) error {
	err := os.Do(ctx, http.MethodPost, "/_tasks/"+url.PathEscape(taskID)+"/_cancel", nil, nil)
	if err != nil && !osapi.IsStatus(err, http.StatusNotFound) {
		return fmt.Errorf("reindex: cancel task %s: %w", taskID, err)
	}
	return nil
}

func refresh(ctx context.Context, os *osapi.Client, index string) error {
	if err := os.Do(ctx, http.MethodPost, "/"+index+"/_refresh", nil, nil); err != nil {
		return fmt.Errorf("reindex: refresh %s: %w", index, err)
	}
	return nil
}

// flush commits the index's segments (a Lucene commit on every shard).
func flush(ctx context.Context, os *osapi.Client, index string) error {
	if err := os.Do(ctx, http.MethodPost, "/"+index+"/_flush", nil, nil); err != nil {
		return fmt.Errorf("reindex: flush %s: %w", index, err)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

var errTaskLost = errors.New("reindex: copy task not found")
