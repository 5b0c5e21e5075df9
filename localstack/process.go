package localstack

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is one server process the stack started. StartTicks (the
// process start time from /proc, in clock ticks since boot) makes sure a PID
// reused by the kernel for another program is never signalled.
type Process struct {
	Component  string `json:"component"`
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
	Log        string `json:"log"`
	// Argv is the command line it was started with (the program's path
	// first), so a node killed by a fault test can be started again.
	Argv []string `json:"argv,omitempty"`
}

// startProcess runs cmd in its own session with its output in logPath and
// returns its record. The child outlives the caller: the stack is stopped by
// `down`, by PID.
func startProcess(component string, cmd *exec.Cmd, logPath string) (Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return Process{}, fmt.Errorf("%s: open log %s: %w", component, logPath, err)
	}
	defer logFile.Close()
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	if err := cmd.Start(); err != nil {
		return Process{}, fmt.Errorf("%s: start %s: %w (log: %s)", component, cmd.Path, err, logPath)
	}
	pid := cmd.Process.Pid
	// Reap the child if it exits while we are still running, so it does not
	// linger as a zombie that still looks alive to processAlive.
	go cmd.Wait() //nolint:errcheck // exit status is read from the log
	ticks, err := processStartTicks(pid)
	if err != nil {
		return Process{}, fmt.Errorf("%s: read start time of pid %d: %w", component, pid, err)
	}
	argv := append([]string{cmd.Path}, cmd.Args[1:]...)
	return Process{Component: component, PID: pid, StartTicks: ticks, Log: logPath, Argv: argv}, nil
}

// processStartTicks reads field 22 (starttime) of /proc/PID/stat.
func processStartTicks(pid int) (uint64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may contain spaces; fields after it start
	// after the last ')'.
	end := bytes.LastIndexByte(raw, ')')
	if end < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat format", pid)
	}
	fields := strings.Fields(string(raw[end+1:]))
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat format", pid)
	}
	if fields[0] == "Z" {
		return 0, fmt.Errorf("pid %d is a zombie", pid)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// Alive reports whether the recorded process is still the one we started.
func (p Process) Alive() bool {
	ticks, err := processStartTicks(p.PID)
	return err == nil && ticks == p.StartTicks
}

// Stop sends sig, waits up to grace for the process to exit, then kills it.
func (p Process) Stop(sig syscall.Signal, grace time.Duration) error {
	if !p.Alive() {
		return nil
	}
	if err := syscall.Kill(p.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%s: signal pid %d: %w", p.Component, p.PID, err)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !p.Alive() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%s: kill pid %d: %w", p.Component, p.PID, err)
	}
	for i := 0; i < 100 && p.Alive(); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if p.Alive() {
		return fmt.Errorf("%s: pid %d did not exit after SIGKILL", p.Component, p.PID)
	}
	return nil
}

// tailFile returns the last n bytes of a log, for error messages.
func tailFile(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := st.Size() - n
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return ""
	}
	return string(buf)
}
