package layout

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestReplicaSettings: a count turns auto-expansion off, a range turns it
// on, and every role's default body auto-expands 0-1 (one replica once a
// second data node exists, none on one node).
func TestReplicaSettings(t *testing.T) {
	cases := []struct {
		in   string
		want map[string]any
	}{
		{"0", map[string]any{"number_of_replicas": 0, "auto_expand_replicas": "false"}},
		{"2", map[string]any{"number_of_replicas": 2, "auto_expand_replicas": "false"}},
		{"0-1", map[string]any{"auto_expand_replicas": "0-1"}},
		{"1-all", map[string]any{"auto_expand_replicas": "1-all"}},
	}
	for _, c := range cases {
		if got := ReplicaSettings(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ReplicaSettings(%q) = %v, want %v", c.in, got, c.want)
		}
		if err := (IndexSettings{Shards: 1, Replicas: c.in, RefreshInterval: "1s"}).Validate("nested"); err != nil {
			t.Errorf("Validate(%q): %v", c.in, err)
		}
	}
	for _, bad := range []string{"", "9", "-1", "1-0", "0-x", "a", "0-9"} {
		err := (IndexSettings{Shards: 1, Replicas: bad, RefreshInterval: "1s"}).Validate("menus")
		if err == nil || !strings.Contains(err.Error(), "menus-replicas") {
			t.Errorf("Validate(%q) = %v, want an error naming menus-replicas", bad, err)
		}
	}
	cfg := Defaults()
	var all []string
	for _, k := range Kinds() {
		all = append(all, Roles(k)...)
	}
	for _, role := range all {
		raw, err := cfg.IndexBody(role)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Settings struct {
				Index map[string]any `json:"index"`
			} `json:"settings"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatal(err)
		}
		want := "0-1"
		if role == RoleHotShops {
			want = "0-all" // every data node holds the shop-head index, and its hot table
			if body.Settings.Index["replication.type"] != "DOCUMENT" {
				t.Errorf("%s: replication.type = %v, want DOCUMENT (replicas apply each operation, which the plugin's listener sees)", role, body.Settings.Index["replication.type"])
			}
		}
		if got := body.Settings.Index["auto_expand_replicas"]; got != want {
			t.Errorf("%s: auto_expand_replicas = %v, want %s", role, got, want)
		}
		if _, ok := body.Settings.Index["number_of_replicas"]; ok {
			t.Errorf("%s: number_of_replicas set beside auto_expand_replicas", role)
		}
	}
}

// The shop-head index must stay one shard on every data node: other
// settings are refused, naming the flag and what it allows.
func TestHotShopsSettingsAreFixed(t *testing.T) {
	for _, c := range []struct {
		shards   int
		replicas string
		flag     string
	}{{2, HotShopsReplicas, "hot-shops-shards"}, {1, "0-1", "hot-shops-replicas"}} {
		cfg := Defaults()
		cfg.HotShops.Shards, cfg.HotShops.Replicas = c.shards, c.replicas
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.flag) || !strings.Contains(err.Error(), "allowed") {
			t.Errorf("hot-shops %d shards, replicas %q: %v, want an error naming %s and what it allows", c.shards, c.replicas, err, c.flag)
		}
	}
	if d := Defaults(); d.Validate() != nil {
		err := d.Validate()
		t.Errorf("the defaults: %v", err)
	}
}
