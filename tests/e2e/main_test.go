package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/tenantguard/tenantguard/tests/live"
)

// cluster is shared by every test of the package: starting a control plane
// takes seconds, and the tests build on each other's namespaces as a real
// tenant would.
var cluster *live.Cluster

func TestMain(m *testing.M) {
	c, err := live.Start(context.Background(), live.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	cluster = c
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "tenantguard serve logs:\n"+c.Logs.String())
	}
	c.Stop()
	os.Exit(code)
}
