package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is set at build time with -ldflags "-X github.com/tenantguard/tenantguard/internal/cli.Version=...".
var Version = "dev"

// versionInfo is what `tenantguard version -o json` prints and `serve` logs at start.
type versionInfo struct {
	Version string `json:"version"`
	// Commit is the VCS revision the binary was built from, "+dirty" when
	// the tree had changes; empty when Go recorded none (go run, go test).
	Commit string `json:"commit,omitempty"`
	// Time is the commit's time (RFC 3339).
	Time     string `json:"commitTime,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// buildInfo is Version with what Go recorded in the binary.
func buildInfo() versionInfo {
	info := versionInfo{Version: Version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.time":
				info.Time = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty && info.Commit != "" {
			info.Commit += "+dirty"
		}
	}
	return info
}

// String is the one line of `tenantguard version` and `--version`.
func (v versionInfo) String() string {
	commit := v.Commit
	if commit == "" {
		commit = "unknown commit"
	}
	return fmt.Sprintf("tenantguard %s (%s, %s, %s)", v.Version, commit, v.Go, v.Platform)
}

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the tenantguard version, the commit it was built from, and Go's",
		Example: `  tenantguard version
  tenantguard version -o json | jq -r .commit`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := buildInfo()
			switch output {
			case "text":
				_, err := fmt.Fprintln(cmd.OutOrStdout(), info)
				return err
			case "json":
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				enc.SetEscapeHTML(false)
				return enc.Encode(info)
			}
			return usageErrorf("-o must be text or json, got %q", output)
		},
	}
	outputFlag(cmd, &output, "text", "text or json", "text", "json")
	return cmd
}
