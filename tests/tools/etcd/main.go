// Command etcd is the upstream etcd server, built from the Go module proxy for
// tenantguard's end-to-end tests. It is a test tool only and never ships.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
