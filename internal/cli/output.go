package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// outputFlag registers -o/--output with its default and usage, and completes
// its value from formats.
func outputFlag(cmd *cobra.Command, output *string, def, usage string, formats ...string) {
	cmd.Flags().StringVarP(output, "output", "o", def, usage)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
}

// writeData writes v as indented JSON (format json) or YAML (format yaml).
func writeData(w io.Writer, format string, v any) error {
	if format == "yaml" {
		raw, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(raw)
		return err
	}
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", raw)
	return err
}
