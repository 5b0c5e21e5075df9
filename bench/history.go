package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DefaultRunsDir is where run records go, under the report directory.
const DefaultRunsDir = "runs"

// RunRecord is one benchmark run as kept in <report-dir>/runs: the summary
// the benchmark printed, and what is needed to compare it with another run
// later: the code (git revision), the servers (their versions, asked of the
// servers the benchmark used) and the machine's load.
type RunRecord struct {
	Bench string    `json:"bench"`
	Start time.Time `json:"start"` // UTC
	End   time.Time `json:"end"`   // UTC
	// Command is the command line that ran the benchmark.
	Command string `json:"command"`
	// Revision is the git revision of the code, "+dirty" when the work tree
	// had changes, "unknown" when not known.
	Revision string `json:"revision"`
	Go       string `json:"go"`
	// Servers maps "opensearch", "redis", "postgresql" to the version each
	// server the benchmark used reported; a server it did not use is
	// absent. A value starting with "unknown" says why it is not known.
	Servers map[string]string `json:"servers,omitempty"`
	// LoadBefore and LoadAfter are /proc/loadavg when the run started and
	// ended; nil where the system has none.
	LoadBefore *LoadAvg `json:"load_before,omitempty"`
	LoadAfter  *LoadAvg `json:"load_after,omitempty"`
	// Targets are the summary's evaluated targets, and Verdicts how many
	// were met, missed and undecided.
	Targets  map[string]any  `json:"targets"`
	Verdicts map[Verdict]int `json:"verdicts"`
	Summary  map[string]any  `json:"summary"`
}

// LoadAvg is the 1, 5 and 15 minute load average.
type LoadAvg struct {
	Load1  float64 `json:"1m"`
	Load5  float64 `json:"5m"`
	Load15 float64 `json:"15m"`
}

// ReadLoadAvg reads /proc/loadavg.
func ReadLoadAvg() (*LoadAvg, error) {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil, err
	}
	return ParseLoadAvg(string(raw))
}

// ParseLoadAvg parses the first three fields of /proc/loadavg.
func ParseLoadAvg(s string) (*LoadAvg, error) {
	f := strings.Fields(s)
	if len(f) < 3 {
		return nil, fmt.Errorf("bench: loadavg %q: want 3 fields", s)
	}
	var v [3]float64
	for i := range v {
		x, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return nil, fmt.Errorf("bench: loadavg field %d %q: %w", i+1, f[i], err)
		}
		v[i] = x
	}
	return &LoadAvg{v[0], v[1], v[2]}, nil
}

// NewRunRecord fills Targets and Verdicts from the summary.
func NewRunRecord(name string, summary map[string]any) RunRecord {
	r := RunRecord{Bench: name, Summary: summary, Revision: "unknown", Verdicts: map[Verdict]int{}}
	r.Targets, _ = summary["targets"].(map[string]any)
	if r.Targets == nil {
		r.Targets = map[string]any{}
	}
	for _, t := range r.Targets {
		obj, _ := t.(map[string]any)
		v, _ := obj["verdict"].(string)
		if !Verdict(v).Valid() {
			v = string(VerdictUndecided)
		}
		r.Verdicts[Verdict(v)]++
	}
	return r
}

// TargetsWith returns the names of the summary's targets with verdict v,
// sorted.
func TargetsWith(summary map[string]any, v Verdict) []string {
	targets, _ := summary["targets"].(map[string]any)
	var out []string
	for name, t := range targets {
		obj, _ := t.(map[string]any)
		if got, _ := obj["verdict"].(string); Verdict(got) == v {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// RunFileName is "<UTC start, 20061102T150405Z>-<bench>.json": runs sort by
// time in a directory listing.
func RunFileName(start time.Time, name string) string {
	return start.UTC().Format("20060102T150405Z") + "-" + name + ".json"
}

// WriteRun writes r to dir/RunFileName(r.Start, r.Bench) and returns the
// path. It never replaces a record: a second run in the same second gets a
// "-2" suffix.
func WriteRun(dir string, r RunRecord) (string, error) {
	if r.Start.IsZero() {
		return "", errors.New("bench: run record without a start time")
	}
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("bench: encode the run record of %s: %w", r.Bench, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("bench: runs directory: %w", err)
	}
	base := strings.TrimSuffix(RunFileName(r.Start, r.Bench), ".json")
	for i := 1; i < 100; i++ {
		path := filepath.Join(dir, base+".json")
		if i > 1 {
			path = filepath.Join(dir, fmt.Sprintf("%s-%d.json", base, i))
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("bench: write run record: %w", err)
		}
		_, werr := f.Write(append(raw, '\n'))
		if err := errors.Join(werr, f.Close()); err != nil {
			return "", fmt.Errorf("bench: write run record %s: %w", path, err)
		}
		return path, nil
	}
	return "", fmt.Errorf("bench: 99 run records named %s* in %s already", base, dir)
}

// RewriteRun replaces the record at path (one WriteRun wrote) with r, in
// one rename: a benchmark that writes its record as it goes (bench scale,
// after each size) keeps one file that a stopped run leaves complete up to
// its last finished step.
func RewriteRun(path string, r RunRecord) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: encode the run record of %s: %w", r.Bench, err)
	}
	return writeFileAtomic(path, append(raw, '\n'))
}
