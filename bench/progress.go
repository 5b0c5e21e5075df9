package bench

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Progress reports the progress of long CLI work (loading, reindexing,
// benchmark rounds). On a terminal it redraws one line with done/total,
// percentage, rate and ETA at most every 200 ms; on anything else (a file, a
// pipe, CI logs) it prints one line each time another 10% is done, so logs
// stay short. With total <= 0 it shows the count and rate only, and a
// non-terminal writer gets a line only at Done.
//
// Add is safe from many goroutines and cheap when nothing is printed.
// Progress writes to w only; write errors are ignored (progress is a
// courtesy, never a reason to fail a run).
type Progress struct {
	w        io.Writer
	label    string
	total    int64
	terminal bool
	now      func() time.Time
	start    time.Time

	done atomic.Int64

	mu          sync.Mutex
	lastDraw    time.Time
	lastDecile  int64
	finished    bool
	lineWritten bool
}

// redrawEvery is the minimum time between two redraws on a terminal.
const redrawEvery = 200 * time.Millisecond

// NewProgress starts reporting progress of label towards total on w
// (usually os.Stderr, so stdout keeps the JSON summary).
func NewProgress(w io.Writer, label string, total int64) *Progress {
	return newProgress(w, label, total, isTerminal(w), time.Now)
}

func newProgress(w io.Writer, label string, total int64, terminal bool, now func() time.Time) *Progress {
	return &Progress{w: w, label: label, total: total, terminal: terminal, now: now, start: now()}
}

// isTerminal reports whether w is a character device such as a TTY.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// Add records n more units done.
func (p *Progress) Add(n int64) {
	done := p.done.Add(n)
	if p.terminal {
		p.maybeRedraw(done)
		return
	}
	if p.total > 0 {
		p.maybePrintDecile(done)
	}
}

func (p *Progress) maybeRedraw(done int64) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished || now.Sub(p.lastDraw) < redrawEvery {
		return
	}
	p.lastDraw = now
	fmt.Fprintf(p.w, "\r%s\x1b[K", p.line(done, now))
	p.lineWritten = true
}

func (p *Progress) maybePrintDecile(done int64) {
	decile := min(done*10/p.total, 10)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished || decile <= p.lastDecile || decile >= 10 {
		return // 100% is printed by Done
	}
	p.lastDecile = decile
	fmt.Fprintln(p.w, p.line(done, p.now()))
}

// Done prints the final line (count, elapsed time and average rate) and ends
// the terminal line. Calls after the first do nothing.
func (p *Progress) Done() {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.finished = true
	done := p.done.Load()
	elapsed := now.Sub(p.start)
	line := fmt.Sprintf("%s: %d", p.label, done)
	if p.total > 0 {
		line = fmt.Sprintf("%s: %d/%d (%.0f%%)", p.label, done, p.total, percent(done, p.total))
	}
	line += fmt.Sprintf(" in %s, %s/s", elapsed.Round(time.Millisecond), formatRate(rate(done, elapsed)))
	if p.terminal && p.lineWritten {
		fmt.Fprintf(p.w, "\r%s\x1b[K\n", line)
		return
	}
	fmt.Fprintln(p.w, line)
}

// line renders "label: done/total (pct%) rate/s ETA d".
func (p *Progress) line(done int64, now time.Time) string {
	elapsed := now.Sub(p.start)
	r := rate(done, elapsed)
	if p.total <= 0 {
		return fmt.Sprintf("%s: %d  %s/s", p.label, done, formatRate(r))
	}
	eta := "?"
	if r > 0 && done <= p.total {
		eta = time.Duration(float64(p.total-done) / r * float64(time.Second)).Round(time.Second).String()
	}
	return fmt.Sprintf("%s: %d/%d (%.0f%%)  %s/s  ETA %s", p.label, done, p.total, percent(done, p.total), formatRate(r), eta)
}

func rate(done int64, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(done) / elapsed.Seconds()
}

func percent(done, total int64) float64 {
	return float64(done) * 100 / float64(total)
}

// formatRate prints a rate compactly: 12.5, 850, 12.3k, 1.25M.
func formatRate(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.2fM", r/1e6)
	case r >= 1e4:
		return fmt.Sprintf("%.1fk", r/1e3)
	case r >= 10:
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}
