// Package cli holds tenantguard's cobra commands, one file per subcommand.
// Commands write to the writers they are given, so tests capture their output,
// and report failures as *ExitError carrying the process exit code.
package cli
