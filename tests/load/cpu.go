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

// cpuMeter measures the CPU time a run costs the target and the harness.
type cpuMeter struct {
	target           func() (time.Duration, error)
	target0, self0   time.Duration
	targetOK, selfOK bool
}

func startCPU(target func() (time.Duration, error)) *cpuMeter {
	m := &cpuMeter{target: target}
	if target != nil {
		m.target0, m.targetOK = measure(target)
	}
	m.self0, m.selfOK = measure(selfCPU)
	return m
}

// spent is the CPU time the target and the harness have used since
// startCPU, and whether each could be read.
func (m *cpuMeter) spent() (target, self time.Duration, targetOK, selfOK bool) {
	if m.targetOK {
		var t time.Duration
		if t, targetOK = measure(m.target); targetOK {
			target = t - m.target0
		}
	}
	if m.selfOK {
		var t time.Duration
		if t, selfOK = measure(selfCPU); selfOK {
			self = t - m.self0
		}
	}
	return target, self, targetOK, selfOK
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
