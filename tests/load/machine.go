package load

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// Machine describes the machine from /proc: CPU model, cores, memory.
func Machine() string {
	model := "unknown CPU"
	if info, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(info), "\n") {
			if rest, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ":"))
				break
			}
		}
	}
	mem := ""
	if info, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(info), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
				mem = fmt.Sprintf(", %.0f GiB", kb/1024/1024)
			}
		}
	}
	return fmt.Sprintf("%d vCPU %s%s, %s/%s", runtime.NumCPU(), model, mem, runtime.GOOS, runtime.GOARCH)
}

// Versions names Go and, when given, the opa binary's version.
func Versions(opa string) string {
	out := runtime.Version()
	if opa == "" {
		return out
	}
	v, err := exec.Command(opa, "version").Output()
	if err != nil {
		return out
	}
	for line := range strings.SplitSeq(string(v), "\n") {
		if rest, ok := strings.CutPrefix(line, "Version:"); ok {
			out += ", OPA " + strings.TrimSpace(rest)
		}
	}
	return out
}
