package main

import (
	"testing"

	"github.com/tenantguard/tenantguard/tests/load"
)

func TestParseBuildReadsNameTargetAndBinary(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    load.Build
		wantErr bool
	}{
		{"this binary serves when none is named", "new=tenantguard", load.Build{Name: "new", Target: "tenantguard"}, false},
		{"another commit's binary", "base=tenantguard@/tmp/tgload-base", load.Build{Name: "base", Target: "tenantguard", Executable: "/tmp/tgload-base"}, false},
		{"the null webhook", "null=null", load.Build{Name: "null", Target: "null"}, false},
		{"a name is required", "=tenantguard", load.Build{}, true},
		{"an equals sign is required", "base", load.Build{}, true},
		{"a target is required", "base=", load.Build{}, true},
		{"a binary named by @ is required", "base=tenantguard@", load.Build{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseBuild(tt.in)
			if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
				t.Fatalf("parseBuild(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
