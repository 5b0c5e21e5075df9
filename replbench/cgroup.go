package replbench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupCPURoot is where the cgroup-v1 cpu controller is mounted on this
// machine (`mount | grep cgroup`).
const cgroupCPURoot = "/sys/fs/cgroup/cpu"

// cpuPeriodMicros is the CFS period of a throttled group: within every
// 100 ms the group may run quota µs, then it waits for the next period.
const cpuPeriodMicros = 100_000

// CPULimit is a running cgroup-v1 CPU quota on one process. Remove undoes it.
type CPULimit struct {
	PID     int
	Percent int
	group   string
}

// LimitCPU moves process pid (all its threads) into a new cgroup-v1 cpu group
// limited to percent% of one core (cpu.cfs_quota_us = percent·1000 per
// 100 ms period). This is real server-side degradation: the kernel stops the
// process once it used its quota in a period. It needs root and the v1 cpu
// controller at /sys/fs/cgroup/cpu.
func LimitCPU(pid, percent int) (*CPULimit, error) {
	if percent < 1 || percent > 100 {
		return nil, fmt.Errorf("replbench: cpu limit: got %d%%, allowed: 1..100", percent)
	}
	if _, err := os.Stat(filepath.Join(cgroupCPURoot, "cpu.cfs_quota_us")); err != nil {
		return nil, fmt.Errorf("replbench: cpu limit needs the cgroup-v1 cpu controller at %s: %w", cgroupCPURoot, err)
	}
	group := filepath.Join(cgroupCPURoot, "baedal-replbench-"+strconv.Itoa(pid))
	if err := os.Mkdir(group, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("replbench: create cgroup %s: %w", group, err)
	}
	l := &CPULimit{PID: pid, Percent: percent, group: group}
	steps := []struct{ file, value string }{
		{"cpu.cfs_period_us", strconv.Itoa(cpuPeriodMicros)},
		{"cpu.cfs_quota_us", strconv.Itoa(cpuPeriodMicros * percent / 100)},
		{"cgroup.procs", strconv.Itoa(pid)},
	}
	for _, s := range steps {
		if err := os.WriteFile(filepath.Join(group, s.file), []byte(s.value), 0o644); err != nil {
			return nil, errors.Join(fmt.Errorf("replbench: write %s to %s: %w", s.value, filepath.Join(group, s.file), err), l.Remove())
		}
	}
	return l, nil
}

// SetPercent changes the group's quota to percent% of one core.
func (l *CPULimit) SetPercent(percent int) error {
	if percent < 1 || percent > 100 {
		return fmt.Errorf("replbench: cpu limit: got %d%%, allowed: 1..100", percent)
	}
	file := filepath.Join(l.group, "cpu.cfs_quota_us")
	if err := os.WriteFile(file, []byte(strconv.Itoa(cpuPeriodMicros*percent/100)), 0o644); err != nil {
		return fmt.Errorf("replbench: write %s: %w", file, err)
	}
	l.Percent = percent
	return nil
}

// degrade limits process pid to percent% of one core and returns the limit
// and what undoes it. When capped (the process's own cap, see
// Config.ReplicaCPUPercent) is not nil, its quota is lowered and the undo
// restores it; else the process gets a group of its own that the undo
// removes.
func degrade(pid, percent int, capped *CPULimit) (*CPULimit, func() error, error) {
	if capped == nil {
		l, err := LimitCPU(pid, percent)
		if err != nil {
			return nil, nil, err
		}
		return l, l.Remove, nil
	}
	restore := capped.Percent
	if err := capped.SetPercent(percent); err != nil {
		return nil, nil, err
	}
	return capped, func() error { return capped.SetPercent(restore) }, nil
}

// Remove moves the process back to the root cpu group and deletes the
// group. It is safe to call twice and when the process has exited.
func (l *CPULimit) Remove() error {
	if l == nil || l.group == "" {
		return nil
	}
	// Move every task still in the group (the process, if alive) back.
	raw, err := os.ReadFile(filepath.Join(l.group, "cgroup.procs"))
	if errors.Is(err, os.ErrNotExist) {
		l.group = ""
		return nil
	}
	var errs []error
	for _, pid := range strings.Fields(string(raw)) {
		if err := os.WriteFile(filepath.Join(cgroupCPURoot, "cgroup.procs"), []byte(pid), 0o644); err != nil && !isNoSuchProcess(err) {
			errs = append(errs, fmt.Errorf("replbench: move pid %s back to %s: %w", pid, cgroupCPURoot, err))
		}
	}
	if err := os.Remove(l.group); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("replbench: remove cgroup %s: %w", l.group, err))
	} else {
		l.group = ""
	}
	return errors.Join(errs...)
}

func isNoSuchProcess(err error) bool {
	return strings.Contains(err.Error(), "no such process")
}

// throttledTime reads cpu.stat's throttled_time (ns) of the group: proof
// that the quota bit.
func (l *CPULimit) throttledTime() (uint64, error) {
	raw, err := os.ReadFile(filepath.Join(l.group, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "throttled_time "); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("replbench: no throttled_time in %s/cpu.stat", l.group)
}
