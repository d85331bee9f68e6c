package cli

import "github.com/spf13/cobra"

// outputFlag registers -o/--output with its default and usage, and completes
// its value from formats.
func outputFlag(cmd *cobra.Command, output *string, def, usage string, formats ...string) {
	cmd.Flags().StringVarP(output, "output", "o", def, usage)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
}
