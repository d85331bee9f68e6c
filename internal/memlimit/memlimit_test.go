package memlimit

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestResolve(t *testing.T) {
	noEnv := func(string) string { return "" }
	tests := []struct {
		name    string
		setting string
		files   fstest.MapFS
		env     func(string) string
		limit   int64
		source  string
		err     string
	}{
		{"a size is taken as it is", "128Mi", nil, noEnv, 128 << 20, "flag", ""},
		{"0 sets no limit", "0", nil, noEnv, 0, "flag", ""},
		{"a negative size is an error", "-1Mi", nil, noEnv, 0, "", "is not"},
		{"a word is an error", "lots", nil, noEnv, 0, "", "is not"},
		{"auto takes 90% of the cgroup v2 limit", Auto, fstest.MapFS{"sys/fs/cgroup/memory.max": {Data: []byte("536870912\n")}}, noEnv, 483183820, "cgroup sys/fs/cgroup/memory.max", ""},
		{"auto takes 90% of the cgroup v1 limit", Auto, fstest.MapFS{"sys/fs/cgroup/memory/memory.limit_in_bytes": {Data: []byte("536870912")}}, noEnv, 483183820, "cgroup sys/fs/cgroup/memory/memory.limit_in_bytes", ""},
		{"auto leaves 32 MiB under a small limit", Auto, fstest.MapFS{"sys/fs/cgroup/memory.max": {Data: []byte("167772160")}}, noEnv, 134217728, "cgroup sys/fs/cgroup/memory.max", ""},
		{"a limit under 64 MiB gets half of it", Auto, fstest.MapFS{"sys/fs/cgroup/memory.max": {Data: []byte("50331648")}}, noEnv, 25165824, "cgroup sys/fs/cgroup/memory.max", ""},
		{"an unlimited cgroup v2 sets none", Auto, fstest.MapFS{"sys/fs/cgroup/memory.max": {Data: []byte("max\n")}}, noEnv, 0, "no cgroup limit", ""},
		{"cgroup v1's unlimited value sets none", Auto, fstest.MapFS{"sys/fs/cgroup/memory/memory.limit_in_bytes": {Data: []byte("9223372036854771712")}}, noEnv, 0, "no cgroup limit", ""},
		{"no cgroup file sets none", Auto, fstest.MapFS{}, noEnv, 0, "no cgroup limit", ""},
		{"GOMEMLIMIT wins over auto", Auto, fstest.MapFS{"sys/fs/cgroup/memory.max": {Data: []byte("536870912")}}, func(k string) string {
			if k == "GOMEMLIMIT" {
				return "100MiB"
			}
			return ""
		}, 0, "GOMEMLIMIT", ""},
		{"an unreadable limit is an error", Auto, fstest.MapFS{"sys/fs/cgroup/memory.max": {Data: []byte("lots")}}, noEnv, 0, "", "reading sys/fs/cgroup/memory.max"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit, source, err := Resolve(tt.setting, tt.files, tt.env)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || limit != tt.limit || source != tt.source {
				t.Fatalf("got %d from %q (%v), want %d from %q", limit, source, err, tt.limit, tt.source)
			}
		})
	}
}

func TestAutoLimitGrowsWithTheCgroupLimit(t *testing.T) {
	last := int64(0)
	for n := int64(1 << 20); n <= 1<<30; n += 1 << 19 {
		soft := AutoLimit(n)
		if soft < last || soft > n-n/10+1 || soft < n/2 {
			t.Fatalf("limit %d: soft limit %d after %d", n, soft, last)
		}
		last = soft
	}
}

func TestGCPercent(t *testing.T) {
	env := func(gogc string) func(string) string {
		return func(k string) string {
			if k == "GOGC" {
				return gogc
			}
			return ""
		}
	}
	withMemLimit := func(k string) string {
		if k == "GOMEMLIMIT" {
			return "100MiB"
		}
		return ""
	}
	tests := []struct {
		name    string
		flag    int
		flagSet bool
		gogc    string
		limit   int64
		percent int
		source  string
		err     bool
	}{
		{"nothing set is the default", 0, false, "", 0, DefaultGCPercent, "default", false},
		{"GOGC wins over the default", 0, false, "150", 0, 150, "GOGC", false},
		{"GOGC=off is off", 0, false, "off", 0, -1, "GOGC", false},
		{"a GOGC the runtime cannot read is its 100", 0, false, "lots", 0, 100, "GOGC", false},
		{"the flag wins over GOGC", 200, true, "150", 0, 200, "flag", false},
		{"the flag may turn the collector off under a memory limit", -1, true, "", 128 << 20, -1, "flag", false},
		{"the flag may not turn it off without one", -1, true, "", 0, 0, "", true},
		{"the flag may be Go's default", 100, true, "", 0, 100, "flag", false},
		{"a flag below -1 is an error", -5, true, "", 0, 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			percent, source, err := GCPercent(tt.flag, tt.flagSet, tt.limit, env(tt.gogc))
			if (err != nil) != tt.err || percent != tt.percent || source != tt.source {
				t.Fatalf("got %d from %q (%v), want %d from %q (error: %t)", percent, source, err, tt.percent, tt.source, tt.err)
			}
		})
	}
	if percent, _, err := GCPercent(-1, true, 0, withMemLimit); err != nil || percent != -1 {
		t.Fatalf("off under GOMEMLIMIT: got %d, %v", percent, err)
	}
}
