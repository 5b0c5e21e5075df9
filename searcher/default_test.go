package searcher

import (
	"testing"

	"github.com/baedal/baedal/layout"
)

// A search that names no layout runs on the best layout the server keeps
// up to date and can serve: hot, then split, then nested.
func TestDefaultKindIsTheFirstServedAndAvailableLayout(t *testing.T) {
	cases := []struct {
		name        string
		served      []layout.Kind // nil: not set
		unavailable []layout.Kind
		want        layout.Kind
	}{
		{"every layout", nil, nil, layout.Hot},
		{"no plugin", nil, []layout.Kind{layout.Hot}, layout.Split},
		{"hot not indexed", []layout.Kind{layout.Nested, layout.Split}, nil, layout.Split},
		{"only nested indexed", []layout.Kind{layout.Nested}, nil, layout.Nested},
		{"hot and split down", nil, []layout.Kind{layout.Hot, layout.Split}, layout.Nested},
		{"the only served layout is down", []layout.Kind{layout.Hot}, []layout.Kind{layout.Hot}, layout.Hot},
	}
	for _, c := range cases {
		s := New(nil, layout.Defaults(), Defaults(), nil)
		if c.served != nil {
			s.SetServed(c.served)
		}
		for _, k := range c.unavailable {
			s.SetUnavailable(k, "down in this test")
		}
		if got := s.DefaultKind(); got != c.want {
			t.Errorf("%s: DefaultKind() = %s, want %s", c.name, got, c.want)
		}
	}
	s := New(nil, layout.Defaults(), Defaults(), nil)
	s.SetUnavailable(layout.Hot, "not checked yet")
	if got := s.DefaultKind(); got != layout.Split {
		t.Fatalf("before the plugin check: %s, want split", got)
	}
	s.SetUnavailable(layout.Hot, "")
	if got := s.DefaultKind(); got != layout.Hot {
		t.Fatalf("after the plugin check: %s, want hot", got)
	}
}
