// Package catalog reads a rule library the way tenantguard uses it: its Rego
// modules and tests, the CEL translations beside them (*.cel), and the
// rules each family declares in its # METADATA custom: fields, read through
// OPA's annotations API.
//
// A rule family is one package under data.tenantguard.rules; each of its
// rules is a `violations contains {"id": ID, ...}` definition whose METADATA
// names the id, and the kinds and operations it must see, whether it mutates,
// its default enforcement and the engines it claims (fields the package's
// METADATA gives apply to every rule of the family unless a rule sets its
// own). Everything tenantguard derives about rules comes from a Catalog: the
// rule ids a registry's enforcement may name, the routes (to the rule
// families in Rego, data.tenantguard.catalog, and to the webhook in the
// webhook configurations and the chart), the exports' family maps and
// Gatekeeper kinds, and the rules table of the docs. Adding a family takes
// its folder and no Go.
package catalog
