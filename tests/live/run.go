package live

import "context"

// Run calls start (a manager's Start) in the background with a context of
// its own, derived from ctx; stop cancels that context and returns start's
// result.
func Run(ctx context.Context, start func(context.Context) error) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- start(ctx) }()
	return func() error {
		cancel()
		return <-done
	}
}
