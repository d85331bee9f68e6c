// Package tests holds tenantguard's cross-package suites: the decision-core
// corpus (fixtures/) run through the engine and the review command, and later
// the end-to-end, red-team, load and benchmark suites.
package tests
