package indexer

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
)

// Load writes exactly the documents (sources and external versions) that
// Apply of the shops' upsert events writes, and holds their states; a bulk
// load's pause of refresh and replicas is undone afterwards, down to each
// index's own settings.
func TestLoadWritesWhatApplyWrites(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	kinds, _, err := layout.RunnableKinds(ctx, e.os)
	if err != nil {
		t.Fatal(err)
	}
	loadCfg, applyCfg := e.cfg, e.cfg
	loadCfg.Layout.Prefix, applyCfg.Layout.Prefix = e.ns+"_load_", e.ns+"_apply_"
	t.Cleanup(func() {
		for _, k := range kinds {
			_ = loadCfg.Layout.DeleteIndices(context.Background(), e.os, k)
			_ = applyCfg.Layout.DeleteIndices(context.Background(), e.os, k)
		}
	})
	shops := catalog.GenerateShops(7, 40)
	events := make([]catalog.Event, len(shops))
	for i, s := range shops {
		events[i] = s.UpsertEvent()
	}
	for _, k := range kinds {
		for _, lc := range []layout.Config{loadCfg.Layout, applyCfg.Layout} {
			if err := lc.EnsureIndices(ctx, e.os, k); err != nil {
				t.Fatal(err)
			}
		}
		before := settingsOf(t, e.os, loadCfg.Layout, k)
		restore, err := loadCfg.Layout.PauseForBulkLoad(ctx, e.os, k)
		if err != nil {
			t.Fatal(err)
		}
		if paused := settingsOf(t, e.os, loadCfg.Layout, k); paused[loadCfg.Layout.Aliases(k)[0]+"_v1"]["index.refresh_interval"] != "-1" {
			t.Errorf("%s: refresh not paused: %v", k, paused)
		}
		loader, err := New(loadCfg, k, e.os, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		st, err := loader.Load(ctx, shops)
		if err != nil || len(st.Rejected) > 0 || st.Applied != len(shops) {
			t.Fatalf("%s: Load = %+v, %v", k, st, err)
		}
		if err := restore(ctx); err != nil {
			t.Fatal(err)
		}
		if after := settingsOf(t, e.os, loadCfg.Layout, k); !reflect.DeepEqual(after, before) {
			t.Errorf("%s: settings after the load %v, before %v", k, after, before)
		}
		if held := loader.cache.Len(); held != len(shops) {
			t.Errorf("%s: %d shops held after Load, want %d", k, held, len(shops))
		}
		applier, err := New(applyCfg, k, e.os, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := applier.Apply(ctx, events); err != nil {
			t.Fatal(err)
		}
		for i, role := range layout.Roles(k) {
			loaded := documents(t, e.os, loadCfg.Layout.Alias(role))
			applied := documents(t, e.os, applyCfg.Layout.Alias(role))
			if len(loaded) != len(shops) || !reflect.DeepEqual(loaded, applied) {
				t.Errorf("%s %s (role %d): Load wrote %d documents, Apply %d; equal: %v", k, role, i, len(loaded), len(applied), reflect.DeepEqual(loaded, applied))
			}
		}
	}
}

// settingsOf returns the bulk-load settings of each index of a layout.
func settingsOf(t *testing.T, os *osapi.Client, lc layout.Config, k layout.Kind) map[string]map[string]any {
	t.Helper()
	var got map[string]struct {
		Settings map[string]any `json:"settings"`
	}
	if err := os.Do(context.Background(), http.MethodGet, "/"+strings.Join(lc.Aliases(k), ",")+"/_settings?flat_settings=true", nil, &got); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for index, s := range got {
		out[index] = map[string]any{}
		for _, key := range []string{"index.refresh_interval", "index.auto_expand_replicas", "index.number_of_replicas"} {
			out[index][key] = s.Settings[key]
		}
	}
	return out
}

// documents returns every document of an index by id: its source and
// version.
func documents(t *testing.T, os *osapi.Client, alias string) map[string]any {
	t.Helper()
	if err := os.Do(context.Background(), http.MethodPost, "/"+alias+"/_refresh", nil, nil); err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Hits struct {
			Hits []struct {
				ID      string          `json:"_id"`
				Version int64           `json:"_version"`
				Source  json.RawMessage `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	body := []byte(`{"size":1000,"version":true,"query":{"match_all":{}}}`)
	if err := os.Do(context.Background(), http.MethodPost, "/"+alias+"/_search", body, &resp); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for _, h := range resp.Hits.Hits {
		var src any
		if err := json.Unmarshal(h.Source, &src); err != nil {
			t.Fatal(err)
		}
		out[h.ID] = map[string]any{"version": h.Version, "source": src}
	}
	return out
}
