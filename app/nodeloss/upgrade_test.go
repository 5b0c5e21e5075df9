package nodeloss

import (
	"testing"

	"github.com/baedal/baedal/layout"
)

// TestReadyzMismatchWantsExactlyTheOldNodesNamed checks the condition each
// upgrade step waits for: /readyz disables the hot layout naming exactly the
// nodes on another version, each with it, or serves it on every node.
func TestReadyzMismatchWantsExactlyTheOldNodesNamed(t *testing.T) {
	const want, old = layout.HotPluginVersion, layout.HotPluginVersion + "-previous"
	three := 3
	mixed := map[string][]string{"opensearch-1": {want}, "opensearch-2": {old}, "opensearch-3": {old}}
	upgraded := map[string][]string{"opensearch-1": {want}, "opensearch-2": {want}, "opensearch-3": {want}}
	disabled := func(why string) layout.Health {
		return layout.Health{Layout: layout.Hot, Health: "disabled", Error: why}
	}
	named := "the OpenSearch nodes opensearch-2 (baedal-hot " + old + "), opensearch-3 (baedal-hot " + old + ") lack the baedal-hot plugin " + want
	for _, c := range []struct {
		name     string
		versions map[string][]string
		hot      layout.Health
		ok       bool
	}{
		{"mixed, both old nodes named", mixed, disabled(named), true},
		{"mixed, the hot layout still serving", mixed, layout.Health{Layout: layout.Hot, Health: "green", TablesServing: &three}, false},
		{"mixed, an old node not named", mixed, disabled("the OpenSearch nodes opensearch-2 (baedal-hot " + old + ") lack the baedal-hot plugin " + want), false},
		{"mixed, an upgraded node named", mixed, disabled(named + "; opensearch-1 (baedal-hot " + want + ")"), false},
		{"upgraded, serving on every node", upgraded, layout.Health{Layout: layout.Hot, Health: "green", TablesServing: &three}, true},
		{"upgraded, still disabled", upgraded, disabled(named), false},
		{"upgraded, a table not serving yet", upgraded, layout.Health{Layout: layout.Hot, Health: "green", TablesServing: new(int)}, false},
	} {
		if got := readyzMismatch(c.versions, c.hot, want); (got == "") != c.ok {
			t.Errorf("%s: readyzMismatch = %q, want a match %v", c.name, got, c.ok)
		}
	}
}
