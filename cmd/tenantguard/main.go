// Command tenantguard is the tenantguard multi-tenancy admission controller
// and its offline tools; see `tenantguard --help`.
package main

import (
	"os"

	"github.com/tenantguard/tenantguard/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
