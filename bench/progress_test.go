package bench

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock advances by step on every reading.
type fakeClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

func TestProgressPrintsEveryTenPercentOffTerminal(t *testing.T) {
	var out bytes.Buffer
	p := NewProgress(&out, "loading shops", 1000) // a buffer is not a terminal
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 250 {
				p.Add(1)
			}
		})
	}
	wg.Wait()
	p.Done()
	p.Done() // second Done prints nothing

	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 10 {
		t.Fatalf("%d lines, want 9 (10%%..90%%) plus the final one:\n%s", len(lines), out.String())
	}
	for i, line := range lines[:9] {
		want := []string{"loading shops: ", "/1000 (", "%)", "ETA"}
		for _, w := range want {
			if !strings.Contains(line, w) {
				t.Errorf("line %d %q lacks %q", i, line, w)
			}
		}
		if strings.Contains(line, "\r") {
			t.Errorf("line %d %q has a carriage return off a terminal", i, line)
		}
	}
	if last := lines[9]; !strings.HasPrefix(last, "loading shops: 1000/1000 (100%) in ") || !strings.HasSuffix(last, "/s") {
		t.Errorf("final line %q, want 'loading shops: 1000/1000 (100%%) in <elapsed>, <rate>/s'", last)
	}
}

func TestProgressRedrawsOneLineOnTerminal(t *testing.T) {
	var out bytes.Buffer
	clock := &fakeClock{now: time.Unix(0, 0), step: 100 * time.Millisecond}
	p := newProgress(&out, "reindex", 40, true, clock.Now)
	for range 40 {
		p.Add(1)
	}
	p.Done()
	s := out.String()
	if n := strings.Count(s, "\n"); n != 1 || !strings.HasSuffix(s, "\n") {
		t.Errorf("terminal output has %d newlines, want exactly one, at the end: %q", n, s)
	}
	redraws := strings.Count(s, "\r")
	// One clock step per reading: Add reads once, so about every second Add
	// is 200ms after the last redraw.
	if redraws < 10 || redraws > 41 {
		t.Errorf("%d redraws for 40 Adds 100ms apart, want about 20: %q", redraws, s)
	}
	if !strings.Contains(s, "reindex: 40/40 (100%) in 4.1s, 9.8/s") {
		t.Errorf("final line missing or wrong in %q; want 'reindex: 40/40 (100%%) in 4.1s, 9.8/s'", s)
	}
	if !strings.Contains(s, "/s  ETA ") {
		t.Errorf("no rate and ETA in redraws: %q", s)
	}
}

func TestProgressUnknownTotal(t *testing.T) {
	var out bytes.Buffer
	clock := &fakeClock{now: time.Unix(0, 0), step: time.Second}
	p := newProgress(&out, "events", 0, false, clock.Now)
	p.Add(500)
	p.Add(500)
	p.Done()
	if got, want := out.String(), "events: 1000 in 1s, 1000/s\n"; got != want {
		t.Errorf("output %q, want %q (one line, at Done)", got, want)
	}
}

func TestFormatRate(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want string
	}{
		{0, "0.0"}, {2.54, "2.5"}, {850.4, "850"}, {9999, "9999"}, {12345, "12.3k"}, {999999, "1000.0k"}, {1_250_000, "1.25M"},
	} {
		if got := formatRate(c.rate); got != c.want {
			t.Errorf("formatRate(%v) = %q, want %q", c.rate, got, c.want)
		}
	}
}
