package indexer

import (
	"bufio"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baedal/baedal/eventlog"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/localstack"
)

// Environment of the child worker process of the kill test.
const (
	envKillChild = "BAEDAL_INDEXER_KILL_CHILD" // the namespace to work in
)

// TestKillChildWorker is not a test of its own: it is the worker process that
// TestKillMidBatchLosesNothing starts and kills. It runs indexer.Run for every
// layout of the stack with debug logs on stderr until it is killed (or 3 minutes pass).
func TestKillChildWorker(t *testing.T) {
	ns := os.Getenv(envKillChild)
	if ns == "" {
		t.Skip("helper process of TestKillMidBatchLosesNothing")
	}
	st := stacktest.Require(t)
	clients := openClients(t, st)
	cfg := testConfig(ns)
	cfg.Layouts = stacktest.Layouts(t, osapi.New(clients.OpenSearch))
	cfg.BatchSize = 200
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := Run(ctx, cfg, clients, log, nil); err != nil {
		t.Fatal(err)
	}
}

// startChild starts the worker process and returns it with a channel that
// receives one value per "bulk written" log line.
func startChild(t *testing.T, st *localstack.State, ns string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChildWorker$", "-test.count=1")
	cmd.Env = append(os.Environ(), envKillChild+"="+ns, stacktest.EnvStateDir+"="+st.StateDir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	bulks := make(chan struct{}, 10_000)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "bulk written") {
				bulks <- struct{}{}
			}
		}
		close(bulks)
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, bulks
}

// waitBulks waits for n bulk writes of the child.
func waitBulks(t *testing.T, bulks <-chan struct{}, n int) {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for range n {
		select {
		case _, ok := <-bulks:
			if !ok {
				t.Fatal("the worker process exited before it wrote")
			}
		case <-timeout:
			t.Fatalf("the worker process wrote fewer than %d bulks in 2 minutes", n)
		}
	}
}

func sigkill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("worker process did not die by SIGKILL: %v", err)
	}
}

// TestKillMidBatchLosesNothing appends a catalog and a few thousand realistic
// events, runs the stream worker in a child process, SIGKILLs it right after
// a bulk was written (before its batch was acknowledged), twice, then lets a
// third run drain the log, and compares every document of both layouts, its
// version and fields (and the hot layout's table rows), with the states
// computed from the same events.
func TestKillMidBatchLosesNothing(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	const seed, numShops = 21, 300
	events := append(initialLoad(seed, numShops), streamEvents(seed, numShops, 4000)...)
	want := expectedShops(t, seed, numShops, events[numShops:])
	e.cfg.Layouts = stacktest.Layouts(t, e.os)
	for _, k := range e.cfg.Layouts {
		if err := e.cfg.Layout.EnsureIndices(ctx, e.os, k); err != nil {
			t.Fatal(err)
		}
	}
	evlog := newLog(t, e)
	if _, err := evlog.Append(ctx, events); err != nil {
		t.Fatal(err)
	}

	for run, killAfter := range []int{1, 4} {
		cmd, bulks := startChild(t, e.st, e.ns)
		waitBulks(t, bulks, killAfter)
		sigkill(t, cmd)
		pending := pendingEntries(t, evlog, e.cfg)
		t.Logf("run %d killed after %d bulks; %d entries pending", run+1, killAfter, pending)
		if run == 0 && pending == 0 {
			t.Errorf("nothing was pending after the kill: the kill did not hit a batch in flight")
		}
	}
	cmd, _ := startChild(t, e.st, e.ns)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ok, err := drained(ctx, e.cfg, evlog)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the restarted worker did not drain the log in 2 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
	sigkill(t, cmd)
	letters, err := evlog.DeadLetters(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(letters) > 0 {
		t.Errorf("%d events dead-lettered, first: %+v", len(letters), letters[0])
	}
	for _, k := range e.cfg.Layouts {
		if bad := compareLayout(t, e.os, &e.cfg.Layout, k, want); bad > 0 {
			t.Errorf("%s: %d documents lost or stale after the kills", k, bad)
		}
	}
}

func pendingEntries(t *testing.T, evlog *eventlog.Log, cfg Config) int64 {
	t.Helper()
	var total int64
	for _, k := range cfg.Layouts {
		for p := range cfg.Log.Partitions {
			_, pending, err := evlog.Consumer(GroupName(k), p).Lag(context.Background())
			if err == nil {
				total += pending
			}
		}
	}
	return total
}
