package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes shared by every command.
const (
	ExitOK     = 0
	ExitDenied = 1 // the answer is no: a denied request, an invalid registry
	ExitUsage  = 2 // bad input or usage
)

// ExitError carries the exit code of a failed command. Its message, if any,
// is printed to stderr.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit code %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

func usageErrorf(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// NewRootCommand builds the tenantguard command tree.
func NewRootCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "tenantguard",
		Short:         "Kubernetes multi-tenancy admission controller with tenant rules in Rego",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.Version = buildInfo().String()
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &ExitError{Code: ExitUsage, Err: err}
	})
	root.AddCommand(newReviewCommand(), newAuditCommand(), newStatusCommand(), newRulesCommand(), newRegistryCommand(), newGenerateCommand(), newExportCommand(), newServeCommand(), newVersionCommand(), newWebhookCheckCommand())
	return root
}

// Run executes the command line and returns the process exit code; SIGINT
// and SIGTERM cancel the command's context (serve shuts down gracefully).
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return RunContext(ctx, args, stdin, stdout, stderr)
}

// RunContext is Run with the command's context given.
func RunContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := NewRootCommand(stdin, stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var exit *ExitError
	if !errors.As(err, &exit) {
		// cobra's own errors: unknown command or flag, wrong arguments.
		exit = &ExitError{Code: ExitUsage, Err: err}
	}
	if exit.Err != nil {
		if cmd != nil && cmd.Name() == "serve" {
			logFatal(stderr, exit)
		}
		_, _ = fmt.Fprintf(stderr, "tenantguard: %s\n", strings.TrimSpace(exit.Err.Error()))
	}
	return exit.Code
}

// logFatal writes the error that stops serve as one more of its JSON log
// lines, before the plain line every command prints, so that a log
// pipeline reading serve's JSON sees why it stopped, flag errors included.
func logFatal(stderr io.Writer, exit *ExitError) {
	slog.New(slog.NewJSONHandler(stderr, nil)).Error("tenantguard serve stopped", "error", strings.TrimSpace(exit.Err.Error()), "exitCode", exit.Code)
}
