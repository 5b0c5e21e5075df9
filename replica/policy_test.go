package replica

import (
	"errors"
	"flag"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParsePolicyName(t *testing.T) {
	for _, name := range PolicyNames {
		got, err := ParsePolicyName(string(name))
		if err != nil || got != name {
			t.Errorf("ParsePolicyName(%q) = %q, %v; want %q", name, got, err, name)
		}
	}
	for _, bad := range []string{"", "C3", "roundrobin", "least-outstanding"} {
		_, err := ParsePolicyName(bad)
		if !errors.Is(err, ErrUnknownPolicy) {
			t.Errorf("ParsePolicyName(%q) error = %v, want ErrUnknownPolicy", bad, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "c3, round-robin, random, lowest-ping") || !strings.Contains(msg, `"`+bad+`"`) {
			t.Errorf("ParsePolicyName(%q) error %q, want the bad value and the allowed values", bad, msg)
		}
	}
}

func TestConfigDefaultsAndValidate(t *testing.T) {
	d := Config{}.WithDefaults()
	if d.Policy != PolicyC3 || d.Alpha != 0.3 || d.Clients != 1 || d.ProbeLimit != 1 || d.Now == nil ||
		d.ErrorPenalty != DefaultErrorPenalty || d.ErrorBackoff != DefaultErrorBackoff ||
		d.MaxErrorBackoff != DefaultMaxErrorBackoff || d.PingRefresh != DefaultPingRefresh ||
		d.Tolerance != 0.25 || d.SlowFactor != 0 {
		t.Errorf("Config{}.WithDefaults() = %+v, want the Default* values", d)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero Config: Validate() = %v, want nil (zero fields take defaults)", err)
	}
	if d := (Config{EjectTime: 3 * time.Second}).WithDefaults(); d.ProbationTime != 3*time.Second {
		t.Errorf("EjectTime 3s with zero ProbationTime defaults it to %s, want 3s", d.ProbationTime)
	}
	if d := (Config{ErrorBackoff: time.Minute}).WithDefaults(); d.MaxErrorBackoff != time.Minute {
		t.Errorf("ErrorBackoff 1m with zero MaxErrorBackoff defaults it to %s, want 1m", d.MaxErrorBackoff)
	}

	tests := []struct {
		cfg       Config
		wantField string
	}{
		{Config{Policy: "fastest"}, "Policy"},
		{Config{Alpha: -0.1}, "Alpha"},
		{Config{Alpha: 1.5}, "Alpha"},
		{Config{Clients: -1}, "Clients"},
		{Config{ProbeLimit: -2}, "ProbeLimit"},
		{Config{ErrorPenalty: -time.Second}, "ErrorPenalty"},
		{Config{ErrorBackoff: -time.Second}, "ErrorBackoff"},
		{Config{ErrorBackoff: time.Minute, MaxErrorBackoff: time.Second}, "MaxErrorBackoff"},
		{Config{PingRefresh: -time.Second}, "PingRefresh"},
		{Config{Tolerance: 11}, "Tolerance"},
		{Config{SlowFactor: 0.5}, "SlowFactor"},
		{Config{ProbationTime: -time.Second}, "ProbationTime"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.wantField+":") {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", tt.cfg, err, tt.wantField)
		}
		if _, err := New(3, tt.cfg); err == nil {
			t.Errorf("New(3, %+v) succeeded, want the validation error", tt.cfg)
		}
	}
	// Several bad fields are all reported.
	err := Config{Alpha: 2, Clients: -1}.Validate()
	if err == nil || !strings.Contains(err.Error(), "Alpha:") || !strings.Contains(err.Error(), "Clients:") {
		t.Errorf("Validate with two bad fields = %v, want both named", err)
	}
	if _, err := New(0, Config{}); err == nil || !strings.Contains(err.Error(), "0 replicas") {
		t.Errorf("New(0, Config{}) = %v, want an error naming the replica count", err)
	}
}

func TestConfigFlags(t *testing.T) {
	var cfg Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	cfg.Flags(fs, "redis-replica-")
	err := fs.Parse([]string{"-redis-replica-policy=lowest-ping", "-redis-replica-alpha=0.5", "-redis-replica-probe-limit=2", "-redis-replica-error-backoff=2s"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Policy != PolicyLowestPing || cfg.Alpha != 0.5 || cfg.ProbeLimit != 2 || cfg.ErrorBackoff != 2*time.Second || cfg.Clients != 1 {
		t.Errorf("after flags: %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate after flags: %v", err)
	}

	fs = flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	cfg.Flags(fs, "")
	err = fs.Parse([]string{"-policy=fastest"})
	if err == nil || !strings.Contains(err.Error(), "allowed: c3, round-robin, random, lowest-ping") {
		t.Errorf("bad -policy flag: %v, want an error listing the allowed values", err)
	}
}

func TestRoundRobin(t *testing.T) {
	p := newTestPolicy(t, 3, Config{Policy: PolicyRoundRobin, Now: newFakeClock().Now})
	var picks []int
	for range 7 {
		picks = append(picks, p.Pick())
	}
	if want := []int{0, 1, 2, 0, 1, 2, 0}; !slices.Equal(picks, want) {
		t.Errorf("round-robin picks %v, want %v", picks, want)
	}
	if got := p.Select(nil); !slices.Equal(got, []int{1, 2, 0}) {
		t.Errorf("round-robin Select = %v, want [1 2 0]", got)
	}
	if got := statsOf(p, 0).Chosen; got != 3 {
		t.Errorf("replica 0 chosen %d times, want 3", got)
	}
}

func TestRandomIsSeededAndUniform(t *testing.T) {
	run := func(seed uint64) []int {
		p := newTestPolicy(t, 4, Config{Policy: PolicyRandom, Seed: seed, Now: newFakeClock().Now})
		picks := make([]int, 4000)
		for i := range picks {
			picks[i] = p.Pick()
		}
		return picks
	}
	a, b, c := run(1), run(1), run(2)
	if !slices.Equal(a, b) {
		t.Error("random policy with the same seed gave different sequences")
	}
	if slices.Equal(a, c) {
		t.Error("random policy with seeds 1 and 2 gave the same sequence")
	}
	var counts [4]int
	for _, r := range a {
		counts[r]++
	}
	for r, n := range counts {
		if n < 850 || n > 1150 {
			t.Errorf("random picks per replica %v: replica %d far from 1000", counts, r)
		}
	}
	order := newTestPolicy(t, 4, Config{Policy: PolicyRandom, Now: newFakeClock().Now}).Select(nil)
	sorted := slices.Sorted(slices.Values(order))
	if !slices.Equal(sorted, []int{0, 1, 2, 3}) {
		t.Errorf("random Select = %v, want a permutation of all replicas", order)
	}
}

// Lowest-ping re-reads latencies only every PingRefresh, so between
// refreshes it keeps sending to the replica that was fastest.
func TestLowestPingRefreshesPeriodically(t *testing.T) {
	ms := time.Millisecond
	clock := newFakeClock()
	p := newTestPolicy(t, 3, Config{Policy: PolicyLowestPing, PingRefresh: time.Second, Now: clock.Now})
	p.ObservePing(0, 3*ms)
	p.ObservePing(1, 1*ms)
	p.ObservePing(2, 2*ms)
	if got := p.Select(nil); !slices.Equal(got, []int{1, 2, 0}) {
		t.Fatalf("Select = %v, want [1 2 0] by ping", got)
	}
	p.Done(1, ok(50*ms))

	// Replica 1's pings get slow; the order holds until the refresh.
	for range 5 {
		p.ObservePing(1, 20*ms)
	}
	clock.Advance(999 * ms)
	if r := p.Pick(); r != 1 {
		t.Errorf("before refresh: picked %d, want 1 (stale order)", r)
	}
	clock.Advance(1 * ms)
	if r := p.Pick(); r != 2 {
		t.Errorf("after refresh: picked %d, want 2 (now the lowest ping)", r)
	}
	if got := statsOf(p, 1).Ping; got < 10*ms {
		t.Errorf("replica 1 ping EWMA %s, want it to have risen", got)
	}

	// Without pings it uses the response-time EWMA.
	q := newTestPolicy(t, 2, Config{Policy: PolicyLowestPing, Now: clock.Now})
	complete(q, 0, ok(5*ms))
	complete(q, 1, ok(2*ms))
	if r := q.Pick(); r != 1 {
		t.Errorf("without pings: picked %d, want 1 (lower response time)", r)
	}
}

// Pings do not move C3: it ranks by the response times of real requests.
func TestC3IgnoresPings(t *testing.T) {
	ms := time.Millisecond
	p := newTestPolicy(t, 2, Config{Now: newFakeClock().Now})
	complete(p, 0, ok(5*ms))
	complete(p, 1, ok(2*ms))
	p.ObservePing(1, 100*ms)
	if r := p.Pick(); r != 1 {
		t.Errorf("C3 picked %d after a slow ping to replica 1, want 1", r)
	}
}

func TestConcurrentUse(t *testing.T) {
	for _, name := range PolicyNames {
		t.Run(string(name), func(t *testing.T) {
			clock := newFakeClock()
			p := newTestPolicy(t, 5, Config{Policy: name, ProbeLimit: 2, Now: clock.Now})
			const workers, perWorker = 8, 500
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					buf := make([]int, 0, 5)
					var snap []ReplicaStats
					for i := range perWorker {
						clock.Advance(time.Microsecond)
						order := p.Select(buf)
						res := ok(time.Duration(1+order[0]) * time.Millisecond)
						res.Failed = (w+i)%97 == 0
						p.Done(order[0], res)
						switch i % 50 {
						case 0:
							p.ObserveServer(order[1], time.Millisecond, float64(w))
						case 1:
							p.ObservePing(order[2], time.Millisecond)
						case 2:
							snap = p.Snapshot(snap)
						}
					}
				})
			}
			wg.Wait()
			var chosen uint64
			for _, st := range p.Snapshot(nil) {
				if st.Outstanding != 0 {
					t.Errorf("replica %d outstanding %d, want 0", st.Replica, st.Outstanding)
				}
				chosen += st.Chosen
			}
			if chosen != workers*perWorker {
				t.Errorf("chosen total %d, want %d", chosen, workers*perWorker)
			}
		})
	}
}

func TestDoneWithoutStartDoesNotGoNegative(t *testing.T) {
	p := newTestPolicy(t, 1, Config{Now: newFakeClock().Now})
	p.Done(0, ok(time.Millisecond))
	if st := statsOf(p, 0); st.Outstanding != 0 || !st.HasStats {
		t.Errorf("after an unmatched Done: %+v, want outstanding 0 and stats recorded", st)
	}
}

func TestPackageDoc(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	doc := f.Doc.Text()
	if !strings.HasPrefix(doc, "Package replica ") || !strings.Contains(doc, "invariant") {
		t.Errorf("package doc must start with \"Package replica\" and state the main invariant; got:\n%s", doc)
	}
}
