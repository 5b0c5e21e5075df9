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
		if got := body.Settings.Index["auto_expand_replicas"]; got != "0-1" {
			t.Errorf("%s: auto_expand_replicas = %v, want 0-1", role, got)
		}
		if _, ok := body.Settings.Index["number_of_replicas"]; ok {
			t.Errorf("%s: number_of_replicas set beside auto_expand_replicas", role)
		}
	}
}
