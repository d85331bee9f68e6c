// Command kube-apiserver is the upstream Kubernetes API server, built from the
// Go module proxy so that tenantguard's end-to-end tests run against the real
// thing. It is a test tool only and never ships.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
