package memlimit

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Auto is the setting that derives the limit from the cgroup.
const Auto = "auto"

// Share is the part of the cgroup memory limit Auto sets as the soft limit:
// the rest is room for what the Go runtime does not count (stacks, the
// binary) and for the limit being soft.
const Share = 0.9

// Headroom is the least room Auto leaves under the cgroup limit: the
// binary's resident pages and the stacks alone take about 25 MiB, more
// than a tenth of a small pod's limit.
const Headroom = 32 << 20

// cgroupFiles are where cgroup v2 and v1 expose the memory limit.
var cgroupFiles = []string{"sys/fs/cgroup/memory.max", "sys/fs/cgroup/memory/memory.limit_in_bytes"}

// Resolve works out the soft limit in bytes for a setting: "auto", "0"
// (none), or a size such as 128Mi. With "auto" it is Share of the cgroup
// limit read from root (the filesystem root), leaving at least Headroom
// under it, or half of a limit under 64 MiB (AutoLimit); or 0 when
// GOMEMLIMIT is set (the runtime has applied it) or no cgroup limit is
// found. source says where the limit came from.
func Resolve(setting string, root fs.FS, env func(string) string) (limit int64, source string, err error) {
	if setting != Auto {
		q, err := resource.ParseQuantity(setting)
		if err != nil || q.Sign() < 0 {
			return 0, "", fmt.Errorf("memory limit %q is not %q, 0 or a size such as 128Mi", setting, Auto)
		}
		return q.Value(), "flag", nil
	}
	if env("GOMEMLIMIT") != "" {
		return 0, "GOMEMLIMIT", nil
	}
	for _, file := range cgroupFiles {
		data, err := fs.ReadFile(root, file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, "", err
		}
		text := strings.TrimSpace(string(data))
		n, err := strconv.ParseInt(text, 10, 64)
		if text == "max" || (err == nil && n >= math.MaxInt64/2) {
			return 0, "no cgroup limit", nil // unlimited; v1 reports a huge number
		}
		if err != nil {
			return 0, "", fmt.Errorf("reading %s: %w", file, err)
		}
		return AutoLimit(n), "cgroup " + file, nil
	}
	return 0, "no cgroup limit", nil
}

// AutoLimit is Auto's soft limit under a cgroup limit of n bytes: Share
// of it, but no more than n less Headroom, and no less than half of n (a
// limit under twice Headroom). It grows with n.
func AutoLimit(n int64) int64 {
	return min(int64(float64(n)*Share), max(n-Headroom, n/2))
}

// Apply resolves setting on this machine and sets the runtime's soft
// memory limit when the result is not 0.
func Apply(setting string) (limit int64, source string, err error) {
	limit, source, err = Resolve(setting, os.DirFS("/"), os.Getenv)
	if err == nil && limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	return limit, source, err
}
