package reindex

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/layout"
)

// runKilledChild runs the job in a child orchestrator process (with
// stopIn as the phase it stops in, "" for none), calls onLine with every
// line of its stderr until onLine returns true, then SIGKILLs it.
func runKilledChild(t *testing.T, e *testEnv, jobID, stopIn string, onLine func(line string) bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChildOrchestrator$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envKillChild+"="+e.ns+","+jobID+","+stopIn, stacktest.EnvStateDir+"="+e.st.StateDir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	reached := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			if line := sc.Text(); strings.Contains(line, "verification") || strings.Contains(line, "phase=") || strings.Contains(line, "level=ERROR") {
				t.Logf("child: %s", line)
			}
			if !signalled && onLine(sc.Text()) {
				signalled = true
				close(reached)
			}
		}
	}()
	select {
	case <-reached:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the orchestrator child did not reach phase %q in 3 minutes", stopIn)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("orchestrator did not die by SIGKILL: %v", cmd.ProcessState)
	}
}

// churnShops are shops outside the generated catalog and the event stream
// (ids from churnFirstID) that the test creates, deletes and re-creates
// itself, so that deletes and re-creates land while the copy runs.
const churnFirstID = 900_001

// appendRecorded appends events to the log and to the appender's record,
// in order with the stream's events.
func (e *testEnv) appendRecorded(t *testing.T, a *appender, events []catalog.Event) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := e.evlog.Append(context.Background(), events); err != nil {
		t.Fatal(err)
	}
	a.events = append(a.events, events...)
}

// TestKillDuringVerificationAndDualWrite reindexes under live updates that
// include deletes and re-creates of shops during the copy, SIGKILLs the
// orchestrator during the verification, during the dual-write phase of the
// swap before the alias moved (the catch-up following the log while the
// live indexer writes the old index) and right after the alias moved
// (the dual-write still running), resumes the job here, and checks: the alias moved
// without a write freeze, every document of the new index is the latest
// state of its shop (no deleted shop came back, re-created shops have their
// newest state), the verification counted every document and no mismatch;
// then a rollback under live writes leaves the old index exact too.
func TestKillDuringVerificationAndDualWrite(t *testing.T) {
	e := newTestEnv(t, "")
	e.cleanup(t)
	ctx := context.Background()
	const seed, numShops, numChurn = 11, 600, 24
	if err := e.cfg.Layout.EnsureIndices(ctx, e.os, layout.Nested); err != nil {
		t.Fatal(err)
	}
	alias := e.cfg.Layout.Alias(layout.RoleNested)
	source, err := aliasTarget(ctx, e.os, alias)
	if err != nil {
		t.Fatal(err)
	}
	creates, churn := catalog.ChurnShops(seed+1, churnFirstID, numChurn)
	if _, err := e.evlog.Append(ctx, append(initialLoad(seed, numShops), creates...)); err != nil {
		t.Fatal(err)
	}
	e.liveIndexer(t)
	e.waitDrained(t)
	var app appender
	e.startAppender(t, catalog.NewEventStream(seed, numShops), 100, &app)
	halted := false
	defer func() {
		if !halted {
			app.halt()
		}
	}()

	o := e.orchestrator(t, nil)
	opts := DefaultOptions()
	opts.Alias, opts.Shards = alias, 2
	opts.RequestsPerSecond, opts.BatchSize = 150, 50 // ~4 s for 624 documents: the churn lands mid-copy
	job, err := o.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}

	// First orchestrator: churn once the copy has started, kill it in the
	// verification.
	var churnOnce sync.Once
	runKilledChild(t, e, job.ID, "verifying", func(line string) bool {
		var done, total int64
		if _, err := fmt.Sscanf(line, "PROGRESS step=copying done=%d total=%d", &done, &total); err == nil && done > 0 && done < total {
			churnOnce.Do(func() { e.appendRecorded(t, &app, churn) })
		}
		return line == "PHASE verifying"
	})
	st, err := o.Status(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Step != StepCaughtUp || st.Phase != "verifying" {
		t.Fatalf("killed in step %s phase %q, want caught_up, verifying", st.Step, st.Phase)
	}
	churned := false
	app.mu.Lock()
	for _, ev := range app.events {
		if ev.ID == churnFirstID && ev.Op == catalog.OpDelete {
			churned = true
		}
	}
	app.mu.Unlock()
	if !churned {
		t.Fatal("the churn was not appended during the copy (no copy progress seen)")
	}

	// Second orchestrator: resumes the verification, is killed in the
	// dual-write, before the alias moved.
	runKilledChild(t, e, job.ID, "dual_write", func(line string) bool { return line == "PHASE dual_write" })
	if st, err = o.Status(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	// The churn deletes and re-creates shops, so the documents compared
	// are near numShops, not equal to it.
	if st.Step != StepVerified || st.Phase != "dual_write" || st.MismatchedDocs != 0 || st.ComparedDocs < numShops*9/10 ||
		st.VerifiedDocs+st.ExplainedDocs != st.ComparedDocs || st.VerifiedDocs < st.ComparedDocs*9/10 {
		t.Fatalf("killed in step %s phase %q, compared %d, verified %d, explained %d, mismatched %d %v: want verified, dual_write, >= %d compared, all verified or explained (most verified), 0 mismatched",
			st.Step, st.Phase, st.ComparedDocs, st.VerifiedDocs, st.ExplainedDocs, st.MismatchedDocs, st.Mismatches, numShops*9/10)
	}
	if cur, _ := aliasTarget(ctx, e.os, alias); cur != source {
		t.Fatalf("alias on %s after a kill before the swap, want %s", cur, source)
	}
	if blocked := writeBlock(t, e, source); blocked != "" {
		t.Errorf("the source has a write block %q: the swap must not freeze writes", blocked)
	}

	// Third orchestrator: resumes the dual-write, is killed right after the
	// alias moved, while the dual-write still follows the log.
	runKilledChild(t, e, job.ID, "swapped", func(line string) bool { return line == "PHASE swapped" })
	if st, err = o.Status(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	if st.Step != StepVerified || st.Phase != "swapped" {
		t.Fatalf("killed in step %s phase %q, want verified, swapped", st.Step, st.Phase)
	}
	if cur, _ := aliasTarget(ctx, e.os, alias); cur != job.Target {
		t.Fatalf("alias on %s after a kill right after the swap, want %s", cur, job.Target)
	}

	// Resume here: the alias has moved, the post-swap pass replays from the
	// positions persisted before the swap request.
	if err := o.Run(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	done, err := o.Status(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Step != StepDone || done.FreezeSeconds != 0 {
		t.Fatalf("after resume: step %s, freeze %.3fs: want done, 0", done.Step, done.FreezeSeconds)
	}
	if cur, _ := aliasTarget(ctx, e.os, alias); cur != job.Target {
		t.Fatalf("alias on %s, want %s", cur, job.Target)
	}
	time.Sleep(time.Second)
	app.halt()
	halted = true
	e.waitDrained(t)
	app.mu.Lock()
	all := append(slices.Clone(creates), app.events...)
	app.mu.Unlock()
	want := expectedStates(t, seed, numShops, all)
	lost, stale := compareIndex(t, e.os, job.Target, want)
	resurrected, recreated := 0, 0
	for i := range numChurn {
		id := int64(churnFirstID + i)
		found := docExists(t, e, job.Target, id)
		if want[id].Deleted && found {
			resurrected++
		}
		if !want[id].Deleted && want[id].Version == 3 {
			recreated++
		}
	}
	t.Logf("new index after %d events: %d lost, %d stale, %d resurrected of %d churned shops (%d re-created); verified %d docs",
		len(all), lost, stale, resurrected, numChurn, recreated, done.VerifiedDocs)
	if resurrected != 0 {
		t.Errorf("%d deleted shops came back in the new index", resurrected)
	}
	if recreated == 0 {
		t.Errorf("no churned shop ends re-created: the test does not cover re-creates")
	}

	// Rollback under live writes; the old index must be exact again.
	var app2 appender
	stream := catalog.NewEventStream(seed, numShops)
	for range len(all) - numChurn - len(churn) {
		stream.Next()
	}
	e.startAppender(t, stream, 100, &app2)
	time.Sleep(500 * time.Millisecond)
	if err := o.Rollback(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	app2.halt()
	e.waitDrained(t)
	if cur, _ := aliasTarget(ctx, e.os, alias); cur != source {
		t.Fatalf("after rollback the alias is on %s, want %s", cur, source)
	}
	app2.mu.Lock()
	all = append(all, app2.events...)
	app2.mu.Unlock()
	lost, stale = compareIndex(t, e.os, alias, expectedStates(t, seed, numShops, all))
	t.Logf("after rollback: old index %d lost, %d stale", lost, stale)
}

func writeBlock(t *testing.T, e *testEnv, index string) string {
	t.Helper()
	settings, err := flatSettings(context.Background(), e.os, index, "index.blocks.*")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range settings {
		if v == "true" {
			return k
		}
	}
	return ""
}

func docExists(t *testing.T, e *testEnv, index string, id int64) bool {
	t.Helper()
	err := e.os.Do(context.Background(), http.MethodHead, "/"+index+"/_doc/"+strconv.FormatInt(id, 10), nil, nil)
	if err == nil {
		return true
	}
	if !osapi.IsStatus(err, http.StatusNotFound) {
		t.Fatal(err)
	}
	return false
}

// TestVerificationRefusesSwapOnMismatch damages the target right before the
// verification (a document changed at a higher version, one deleted, one
// that exists only in the target: a resurrected shop) and checks that the
// job refuses to swap, with exactly those shops in its status.
func TestVerificationRefusesSwapOnMismatch(t *testing.T) {
	e := newTestEnv(t, "")
	e.cleanup(t)
	e.cfg.VerifyRounds, e.cfg.VerifyWait = 1, time.Second
	ctx := context.Background()
	const numShops = 300
	e.loadNested(t, 9, numShops)
	alias := e.cfg.Layout.Alias(layout.RoleNested)
	source, _ := aliasTarget(ctx, e.os, alias)
	o := e.orchestrator(t, nil)
	opts := DefaultOptions()
	opts.Alias = alias
	job, err := o.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	o.OnPhase = func(_, phase string) {
		if phase != "verifying" {
			return
		}
		for _, req := range []struct{ method, path, body string }{
			{http.MethodPut, "/" + job.Target + "/_doc/5?version=999&version_type=external", `{"id":5,"name":"damaged","version":999}`},
			{http.MethodDelete, "/" + job.Target + "/_doc/6", ""},
			{http.MethodPut, "/" + job.Target + "/_doc/777777?version=3&version_type=external", `{"id":777777,"name":"deleted long ago","version":3}`},
		} {
			var body []byte
			if req.body != "" {
				body = []byte(req.body)
			}
			if err := e.os.Do(ctx, req.method, req.path, body, nil); err != nil {
				t.Errorf("damage the target: %s %s: %v", req.method, req.path, err)
			}
		}
	}
	err = o.Run(ctx, job.ID)
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("Run: %v, want a verification mismatch", err)
	}
	t.Logf("refused: %.300s", err)
	st, err := o.Status(ctx, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range st.Mismatches {
		ids = append(ids, m.ID+": "+m.Reason)
	}
	wantIDs := []string{"5: " + ReasonVersion, "6: " + ReasonMissingInTarget, "777777: " + ReasonOnlyInTarget}
	if st.Step != StepFailed || st.FailedStep != StepCaughtUp || st.MismatchedDocs != 3 || !slices.Equal(ids, wantIDs) {
		t.Errorf("status: step %s failed step %s, mismatched %d %v; want failed in caught_up, 3: %v", st.Step, st.FailedStep, st.MismatchedDocs, ids, wantIDs)
	}
	// The status the CLI and GET /admin/reindex print carries the report.
	raw, _ := json.Marshal(st)
	for _, want := range []string{`"mismatched_docs":3`, `"verified_docs":298`, `"mismatches":[{"id":"5","reason":"version differs"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("status JSON lacks %s: %.400s", want, raw)
		}
	}
	if st.VerifiedDocs != numShops-2 {
		t.Errorf("verified %d documents, want %d", st.VerifiedDocs, numShops-2)
	}
	if cur, _ := aliasTarget(ctx, e.os, alias); cur != source {
		t.Errorf("alias on %s after a refused verification, want %s", cur, source)
	}
	// A retry verifies again and refuses again; rollback then aborts.
	o.OnPhase = nil
	if err := o.Run(ctx, job.ID); !errors.Is(err, ErrMismatch) {
		t.Errorf("retried Run: %v, want a verification mismatch again", err)
	}
	if err := o.Rollback(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	if st, _ := o.Status(ctx, job.ID); st.Step != StepAborted {
		t.Errorf("after rollback: step %s, want aborted", st.Step)
	}
}
