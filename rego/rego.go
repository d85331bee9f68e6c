// Package rego embeds tenantguard's rule library: the bundle root with its
// .manifest, one folder per rule family under tenantguard/rules (its Rego,
// tests and CEL translation) and the shared packages under tenantguard/lib.
// The same files are what `opa test rego/` runs, what the engine compiles
// and what package catalog reads the rules' declarations from.
package rego

import (
	"embed"
	"io/fs"
)

//go:embed .manifest tenantguard
var bundle embed.FS

// FS is the bundle root: .manifest and tenantguard/**.
func FS() fs.FS { return bundle }
