package load

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the unit of /proc's CPU times: USER_HZ, 100 on every Linux
// architecture Go supports.
const clockTick = 10 * time.Millisecond

// processCPU is the CPU time (user and system) a process has used, from
// /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(data))
}

// parseStatCPU reads utime and stime, fields 14 and 15 of /proc/PID/stat.
// The command name (field 2) is in parentheses and may hold spaces, so
// fields are counted from the last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("/proc stat without a command name")
	}
	fields := strings.Fields(stat[i+1:]) // from field 3, the state
	if len(fields) < 13 {
		return 0, errors.New("/proc stat with too few fields")
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat CPU time %q: %w", f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// selfCPU is the CPU time the harness's own process has used.
func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// The clocks a segment reads at its start and end: the target's CPU time,
// the harness's, and the machine's steal time.
const (
	clockTarget = iota
	clockHarness
	clockSteal
	clocks
)

// clockMeter measures how far the clocks advance over a segment.
type clockMeter struct {
	read  [clocks]func() (time.Duration, error)
	start [clocks]time.Duration
	ok    [clocks]bool
}

// startClocks reads the clocks; target is the target's CPU time, nil when
// not known.
func startClocks(target func() (time.Duration, error)) *clockMeter {
	m := &clockMeter{read: [clocks]func() (time.Duration, error){clockTarget: target, clockHarness: selfCPU, clockSteal: stealTime}}
	for i, f := range m.read {
		if f != nil {
			m.start[i], m.ok[i] = measure(f)
		}
	}
	return m
}

// spent is how far each clock has advanced since startClocks, and whether
// it could be read both times.
func (m *clockMeter) spent() (d [clocks]time.Duration, ok [clocks]bool) {
	for i, f := range m.read {
		if m.ok[i] {
			if now, read := measure(f); read {
				d[i], ok[i] = now-m.start[i], true
			}
		}
	}
	return d, ok
}

func measure(f func() (time.Duration, error)) (time.Duration, bool) {
	d, err := f()
	return d, err == nil
}

// stealTime is the time the hypervisor has given the machine's CPUs to
// others while they had work (steal, /proc/stat), summed over the CPUs: a
// stall of both targets' cores that neither caused.
func stealTime() (time.Duration, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	return parseSteal(string(data))
}

// parseSteal reads the steal time, the eighth value of /proc/stat's "cpu"
// line.
func parseSteal(stat string) (time.Duration, error) {
	line, _, _ := strings.Cut(stat, "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, errors.New("/proc/stat without a cpu line of steal time")
	}
	ticks, err := strconv.ParseInt(fields[8], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/stat steal time %q: %w", fields[8], err)
	}
	return time.Duration(ticks) * clockTick, nil
}
