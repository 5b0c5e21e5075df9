package replbench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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
	if l == nil {
		return nil
	}
	return removeGroup(cgroupCPURoot, &l.group)
}

// removeGroup moves every process still in *group back to the hierarchy's
// root, deletes the group and clears *group. It does nothing when *group
// is empty or already gone.
func removeGroup(root string, group *string) error {
	if *group == "" {
		return nil
	}
	raw, err := os.ReadFile(filepath.Join(*group, "cgroup.procs"))
	if errors.Is(err, os.ErrNotExist) {
		*group = ""
		return nil
	}
	var errs []error
	for _, pid := range strings.Fields(string(raw)) {
		if err := os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(pid), 0o644); err != nil && !isNoSuchProcess(err) {
			errs = append(errs, fmt.Errorf("replbench: move pid %s back to %s: %w", pid, root, err))
		}
	}
	if err := os.Remove(*group); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("replbench: remove cgroup %s: %w", *group, err))
	} else {
		*group = ""
	}
	return errors.Join(errs...)
}

// cgroupCPUSetRoot is where the cgroup-v1 cpuset controller is mounted.
const cgroupCPUSetRoot = "/sys/fs/cgroup/cpuset"

// CPUPin is a running cgroup-v1 cpuset group: its processes run only on
// the CPUs it was made with. Remove undoes it.
type CPUPin struct {
	group string
}

// PinCPUs moves processes pids (all their threads) into a new cpuset group
// named name that may run only on cpus (the kernel's list syntax, "1" or
// "0-2"). It needs root and the v1 cpuset controller at
// /sys/fs/cgroup/cpuset.
func PinCPUs(name, cpus string, pids ...int) (*CPUPin, error) {
	mems, err := os.ReadFile(filepath.Join(cgroupCPUSetRoot, "cpuset.mems"))
	if err != nil {
		return nil, fmt.Errorf("replbench: pinning to CPUs needs the cgroup-v1 cpuset controller at %s: %w", cgroupCPUSetRoot, err)
	}
	group := filepath.Join(cgroupCPUSetRoot, "baedal-replbench-"+name)
	if err := os.Mkdir(group, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("replbench: create cgroup %s: %w", group, err)
	}
	p := &CPUPin{group: group}
	steps := []struct{ file, value string }{
		{"cpuset.cpus", cpus},
		{"cpuset.mems", strings.TrimSpace(string(mems))},
	}
	for _, pid := range pids {
		steps = append(steps, struct{ file, value string }{"cgroup.procs", strconv.Itoa(pid)})
	}
	for _, s := range steps {
		if err := os.WriteFile(filepath.Join(group, s.file), []byte(s.value), 0o644); err != nil {
			return nil, errors.Join(fmt.Errorf("replbench: write %s to %s: %w", s.value, filepath.Join(group, s.file), err), p.Remove())
		}
	}
	return p, nil
}

// Remove moves the processes back to the root cpuset (every CPU) and
// deletes the group. It is safe to call twice.
func (p *CPUPin) Remove() error {
	if p == nil {
		return nil
	}
	return removeGroup(cgroupCPUSetRoot, &p.group)
}

func isNoSuchProcess(err error) bool {
	return strings.Contains(err.Error(), "no such process")
}

// cpuStat is a cpu group's CFS counters (cpu.stat): the periods in which
// it had work, those in which it used its whole quota and was stopped,
// and how long it was stopped in all (ns).
type cpuStat struct {
	Periods, ThrottledPeriods, ThrottledNs uint64
}

// stat reads the group's cpu.stat.
func (l *CPULimit) stat() (cpuStat, error) {
	raw, err := os.ReadFile(filepath.Join(l.group, "cpu.stat"))
	if err != nil {
		return cpuStat{}, err
	}
	var s cpuStat
	fields := map[string]*uint64{"nr_periods": &s.Periods, "nr_throttled": &s.ThrottledPeriods, "throttled_time": &s.ThrottledNs}
	found := 0
	for _, line := range strings.Split(string(raw), "\n") {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if dst := fields[name]; ok && dst != nil {
			if *dst, err = strconv.ParseUint(value, 10, 64); err != nil {
				return cpuStat{}, fmt.Errorf("replbench: %s in %s/cpu.stat: %w", name, l.group, err)
			}
			found++
		}
	}
	if found < len(fields) {
		return cpuStat{}, fmt.Errorf("replbench: %s/cpu.stat lacks nr_periods, nr_throttled or throttled_time", l.group)
	}
	return s, nil
}

// throttledTime reads cpu.stat's throttled_time (ns) of the group: proof
// that the quota bit.
func (l *CPULimit) throttledTime() (uint64, error) {
	s, err := l.stat()
	return s.ThrottledNs, err
}

// isolateServers pins the servers under test (pids) to the machine's last
// CPU and this process, the clients, to the others, so that neither takes
// the other's CPU: with a cap on each server (LimitCPU) every server then
// behaves as on a host of its own. GOMAXPROCS follows the clients' CPUs.
// The returned undo puts everything back.
func isolateServers(pids []int) (undo func() error, err error) {
	n := runtime.NumCPU()
	if n < 2 {
		return nil, fmt.Errorf("replbench: isolate-servers: needs 2 CPUs or more, this process may use %d", n)
	}
	servers, err := PinCPUs("servers-"+strconv.Itoa(os.Getpid()), strconv.Itoa(n-1), pids...)
	if err != nil {
		return nil, err
	}
	clientCPUs := "0"
	if n > 2 {
		clientCPUs = "0-" + strconv.Itoa(n-2)
	}
	clients, err := PinCPUs("clients-"+strconv.Itoa(os.Getpid()), clientCPUs, os.Getpid())
	if err != nil {
		return nil, errors.Join(err, servers.Remove())
	}
	procs := runtime.GOMAXPROCS(n - 1)
	return func() error {
		runtime.GOMAXPROCS(procs)
		return errors.Join(clients.Remove(), servers.Remove())
	}, nil
}

// serverCores says, for a report's set-up, how the servers of a part (kind:
// "replica", "node") share the CPU with each other and with the clients.
func serverCores(kind string, percent int, isolate bool) string {
	var b strings.Builder
	switch {
	case percent > 0:
		fmt.Fprintf(&b, "Each %s is capped at %d%% of one core for the whole part (a cgroup-v1 quota each), as on a host of its own; the victim's cap is lowered.", kind, percent)
	case isolate:
		fmt.Fprintf(&b, "The %ss share a core with each other (no cap).", kind)
	default:
		fmt.Fprintf(&b, "The %ss share the machine's cores with each other and with the clients (no cap).", kind)
	}
	if isolate {
		fmt.Fprintf(&b, " The %ss run on the machine's last CPU and the clients on the others (cgroup-v1 cpusets).", kind)
	}
	return b.String()
}

// readCPUStats reads each cap's counters; a cap whose cpu.stat cannot be
// read reads as zero.
func readCPUStats(caps []*CPULimit) []cpuStat {
	out := make([]cpuStat, len(caps))
	for i, c := range caps {
		out[i], _ = c.stat()
	}
	return out
}

// addCPUStats adds after − before, cap by cap, to sum.
func addCPUStats(sum, before, after []cpuStat) []cpuStat {
	for len(sum) < len(after) {
		sum = append(sum, cpuStat{})
	}
	for i := range min(len(before), len(after)) {
		b, a := before[i], after[i]
		if a.Periods < b.Periods || a.ThrottledPeriods < b.ThrottledPeriods || a.ThrottledNs < b.ThrottledNs {
			continue // a group that was reset: no figure for this round
		}
		sum[i].Periods += a.Periods - b.Periods
		sum[i].ThrottledPeriods += a.ThrottledPeriods - b.ThrottledPeriods
		sum[i].ThrottledNs += a.ThrottledNs - b.ThrottledNs
	}
	return sum
}

// throttledShares returns, per cap, the fraction of periods with work in
// which the group was throttled; nil without caps.
func throttledShares(stats []cpuStat) []float64 {
	var out []float64
	for _, s := range stats {
		v := 0.0
		if s.Periods > 0 {
			v = round3(float64(s.ThrottledPeriods) / float64(s.Periods))
		}
		out = append(out, v)
	}
	return out
}
