// Package quotaledger is the strict mode of tenant-wide quota counting: a
// ledger of admitted creates kept on the API server, one ConfigMap per
// tenant, written with optimistic concurrency, so that replicas of the
// webhook never admit more creates between them than a quota has room for.
//
// The default mode (engine.LocalLedger) is exact within one replica and
// makes no API call. Across R replicas, each replica admits up to the room
// it sees, so a burst spread over them within the informers' delay (usually
// well under a second) can overshoot a quota by up to times the room
// left; two replicas, 50 creates against room for 10, admitted 19. Strict
// mode closes that gap at the price of two API calls (a read and a write) on
// every create that counts against a quota.
package quotaledger
