package app

import (
	"strings"
	"testing"

	"github.com/baedal/baedal/layout"
)

// The demo's progress line counts, per layout, the catalog's entries
// processed on every partition (never more than the catalog has there, as
// live traffic follows it), and is done only when every layout is through.
func TestDemoProgressLine(t *testing.T) {
	kinds := []layout.Kind{layout.Nested, layout.Hot}
	catalog := []int64{100, 50}
	line, done := demoProgressLine(kinds, catalog, map[layout.Kind][]int64{
		layout.Nested: {40, 20},
		layout.Hot:    {100, 80}, // 30 live events past the catalog on partition 1
	})
	if done || !strings.Contains(line, "nested 60/150 (40%)") || !strings.Contains(line, "hot 150/150 (100%)") {
		t.Errorf("line %q, done %v; want nested 60/150 (40%%), hot 150/150 (100%%), not done", line, done)
	}
	line, done = demoProgressLine(kinds, catalog, map[layout.Kind][]int64{
		layout.Nested: {100, 50},
		layout.Hot:    {100, 49},
	})
	if done || !strings.Contains(line, "hot 149/150 (99%)") {
		t.Errorf("line %q, done %v; want hot 149/150 (99%%), not done", line, done)
	}
	_, done = demoProgressLine(kinds, catalog, map[layout.Kind][]int64{
		layout.Nested: {100, 50},
		layout.Hot:    {120, 50},
	})
	if !done {
		t.Error("not done with every layout through the catalog")
	}
}
