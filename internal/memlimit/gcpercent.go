package memlimit

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
)

// DefaultGCPercent is the garbage collector's target serve sets unless told
// otherwise: the heap may grow to four times its live size between
// collections, where Go's default (GOGC=100) lets it double. A webhook's
// live heap is mostly its long-lived view of the cluster, and a request's
// garbage dies with the request; collecting a third as often takes most of
// the collector's CPU time, and its pauses, off the requests. The heap then
// follows the live heap, which grows with the requests in flight: a soft
// memory limit caps it. With 10,000 namespaces and 100,000 pods and a
// 105Mi limit, the resident set stays within 150 MiB even past saturation
// (BENCHMARKS.md).
const DefaultGCPercent = 300

// GCPercent works out the collector's target: the flag's value when it was
// given, else GOGC's when it is set (the runtime has applied it), else
// DefaultGCPercent. A flag of -1 turns the collector off, as GOGC=off does,
// and is refused unless a memory limit bounds the heap: limit, the soft
// limit set (Apply's), or GOMEMLIMIT. source says where the value came from.
func GCPercent(flag int, flagSet bool, limit int64, env func(string) string) (percent int, source string, err error) {
	switch gogc := env("GOGC"); {
	case flagSet && flag < -1:
		return 0, "", fmt.Errorf("GC percent %d is not -1 (off) or more", flag)
	case flagSet && flag == -1 && limit == 0 && env("GOMEMLIMIT") == "":
		return 0, "", errors.New("-1 turns the garbage collector off: it needs a memory limit (--memory-limit, or GOMEMLIMIT), or the heap grows until the process is killed")
	case flagSet:
		return flag, "flag", nil
	case gogc == "off":
		return -1, "GOGC", nil
	case gogc != "":
		n, err := strconv.Atoi(gogc)
		if err != nil {
			n = 100 // what the runtime makes of a GOGC it cannot read
		}
		return n, "GOGC", nil
	}
	return DefaultGCPercent, "default", nil
}

// ApplyGCPercent sets the collector's target GCPercent works out, unless it
// is GOGC's, and returns it with its source.
func ApplyGCPercent(flag int, flagSet bool, limit int64, env func(string) string) (percent int, source string, err error) {
	percent, source, err = GCPercent(flag, flagSet, limit, env)
	if err != nil || source == "GOGC" {
		return percent, source, err
	}
	debug.SetGCPercent(percent)
	return percent, source, nil
}
