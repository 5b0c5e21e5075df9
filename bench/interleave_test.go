package bench

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestInterleaveRunsABBA(t *testing.T) {
	var calls []string
	side := func(name string) Side {
		return Side{Name: name, Run: func(round int) error {
			calls = append(calls, name+string(rune('0'+round)))
			return nil
		}}
	}
	if err := Interleave(4, side("A"), side("B")); err != nil {
		t.Fatal(err)
	}
	want := []string{"A0", "B0", "B1", "A1", "A2", "B2", "B3", "A3"}
	if !slices.Equal(calls, want) {
		t.Errorf("call order %q, want %q", calls, want)
	}

	calls = nil
	if err := Interleave(2, side("A"), side("B"), side("C")); err != nil {
		t.Fatal(err)
	}
	want = []string{"A0", "B0", "C0", "C1", "B1", "A1"}
	if !slices.Equal(calls, want) {
		t.Errorf("three sides: call order %q, want %q", calls, want)
	}
}

func TestInterleaveStopsAtFirstErrorAndNamesIt(t *testing.T) {
	boom := errors.New("boom")
	var calls []string
	err := Interleave(3,
		Side{Name: "baseline", Run: func(round int) error { calls = append(calls, "baseline"); return nil }},
		Side{Name: "ours", Run: func(round int) error {
			calls = append(calls, "ours")
			if round == 1 {
				return boom
			}
			return nil
		}},
	)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want it to wrap boom", err)
	}
	if !strings.Contains(err.Error(), `"ours"`) || !strings.Contains(err.Error(), "round 1") {
		t.Errorf("error %q should name the side and the round", err)
	}
	if want := []string{"baseline", "ours", "ours"}; !slices.Equal(calls, want) {
		t.Errorf("calls %q, want %q: nothing may run after the failure", calls, want)
	}
}

func TestInterleaveRejectsBadArguments(t *testing.T) {
	ok := Side{Name: "a", Run: func(int) error { return nil }}
	for _, c := range []struct {
		name   string
		rounds int
		sides  []Side
		want   string
	}{
		{"zero rounds", 0, []Side{ok}, "rounds is 0"},
		{"no sides", 1, nil, "at least one side"},
		{"nil Run", 1, []Side{ok, {Name: "broken"}}, `"broken"`},
	} {
		err := Interleave(c.rounds, c.sides...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
}
