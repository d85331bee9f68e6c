// Package quotatest stands in for the API server in tests of the strict
// quota ledger (quota.StrictLedger) and of what decides with it: one
// namespace's ConfigMaps, versioned as the API server versions them.
package quotatest
