package localstack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Process returns the recorded process of a component ("opensearch-2").
func (st *State) Process(component string) (Process, bool) {
	for _, p := range st.Processes {
		if p.Component == component {
			return p, true
		}
	}
	return Process{}, false
}

// Kill sends SIGKILL to a component of the stack (fault tests) and waits
// until it is gone.
func (st *State) Kill(component string) error {
	p, ok := st.Process(component)
	if !ok {
		return fmt.Errorf("localstack: no component %s in %s", component, st.StateDir)
	}
	if !p.Alive() {
		return nil
	}
	return p.Stop(syscall.SIGKILL, 5*time.Second)
}

// Terminate stops a component with SIGTERM, as an operator stops a node
// for a rolling restart (an OpenSearch node closes cleanly), and waits up
// to a minute for it to exit (then SIGKILL).
func (st *State) Terminate(component string) error {
	p, ok := st.Process(component)
	if !ok {
		return fmt.Errorf("localstack: no component %s in %s", component, st.StateDir)
	}
	return p.Stop(syscall.SIGTERM, time.Minute)
}

// Pause stops a component with SIGSTOP (a long GC pause, or a host that
// freezes), and Resume continues it with SIGCONT; fault tests.
func (st *State) Pause(component string) error { return st.signal(component, syscall.SIGSTOP) }

// Resume continues a component paused with Pause.
func (st *State) Resume(component string) error { return st.signal(component, syscall.SIGCONT) }

func (st *State) signal(component string, sig syscall.Signal) error {
	p, ok := st.Process(component)
	if !ok {
		return fmt.Errorf("localstack: no component %s in %s", component, st.StateDir)
	}
	if !p.Alive() {
		return fmt.Errorf("localstack: %s (pid %d) is not running", component, p.PID)
	}
	if err := syscall.Kill(p.PID, sig); err != nil {
		return fmt.Errorf("localstack: %s %s (pid %d): %w", sig, component, p.PID, err)
	}
	return nil
}

// RestartOpenSearchNode starts a stopped OpenSearch node of the stack again
// with its recorded command line and data directory, records its new PID,
// and waits until the cluster has all its nodes again (not for green: the
// caller measures that).
func (st *State) RestartOpenSearchNode(ctx context.Context, component string) error {
	return st.RestartOpenSearchNodes(ctx, component)
}

// RestartOpenSearchNodes starts stopped OpenSearch nodes again, all before
// waiting for any (a whole cluster must form again), records their new PIDs
// in one save (so `baedal down` stops every one of them), and waits until
// the cluster has all its nodes. Not safe for concurrent use.
func (st *State) RestartOpenSearchNodes(ctx context.Context, components ...string) error {
	return st.RestartOpenSearchNodesWith(ctx, "", components...)
}

// RestartOpenSearchNodesWith is RestartOpenSearchNodes with another build of
// the baedal-hot plugin when pluginJar is not "": the recorded classpath's
// baedal-hot jar is replaced by pluginJar (its target/lib/* expanded to the
// jars it holds, the launcher jar by a copy without Class-Path in the state
// directory: classpathWithHotPlugin), and the new command line is recorded, so the node keeps
// that plugin when restarted again and `baedal down` stops it. A rolling
// upgrade restarts each node so, one at a time.
func (st *State) RestartOpenSearchNodesWith(ctx context.Context, pluginJar string, components ...string) error {
	if pluginJar != "" {
		abs, err := filepath.Abs(pluginJar)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil || !isHotPluginJar(abs) {
			return fmt.Errorf("localstack: plugin jar %s: want an existing baedal-hot-VERSION.jar (%v)", pluginJar, err)
		}
		pluginJar = abs
	}
	started := make(map[string]Process, len(components))
	for _, component := range components {
		if !strings.HasPrefix(component, "opensearch-") {
			return fmt.Errorf("localstack: %s is not an OpenSearch node", component)
		}
		i := -1
		for j, p := range st.Processes {
			if p.Component == component {
				i = j
			}
		}
		if i < 0 {
			return fmt.Errorf("localstack: no component %s in %s", component, st.StateDir)
		}
		old := st.Processes[i]
		if old.Alive() {
			return fmt.Errorf("localstack: %s (pid %d) is still running", component, old.PID)
		}
		if len(old.Argv) == 0 {
			return fmt.Errorf("localstack: %s was recorded without its command line (started by an older baedal)", component)
		}
		argv := slices.Clone(old.Argv)
		if pluginJar != "" {
			cp := slices.Index(argv, "-cp")
			if cp < 0 || cp+1 >= len(argv) {
				_ = st.save() // the nodes started so far, so `down` stops them
				return fmt.Errorf("localstack: %s was started without -cp; its plugin cannot be replaced", component)
			}
			var err error
			if argv[cp+1], err = classpathWithHotPlugin(argv[cp+1], pluginJar, filepath.Join(st.StateDir, "opensearch")); err != nil {
				_ = st.save()
				return fmt.Errorf("localstack: classpath of %s: %w", component, err)
			}
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		p, err := startProcess(component, cmd, filepath.Join(st.StateDir, "logs", component+".log"))
		if err != nil {
			_ = st.save() // the nodes started so far, so `down` stops them
			return err
		}
		st.Processes[i] = p
		started[component] = p
	}
	if err := st.save(); err != nil {
		return err
	}
	for _, component := range components {
		n := indexSuffix(component)
		if err := waitFor(ctx, started[component], func(ctx context.Context) error {
			return probeOpenSearchNodes(ctx, st.OpenSearchURLs[n], len(st.OpenSearchURLs))
		}); err != nil {
			return err
		}
	}
	return nil
}
