package quota

import "strings"

// Claim names an object by what it counts against: its quota key, its
// namespace ("" for a namespace) and its name. A reservation holds a claim's
// place until the object it names is seen; the cluster view names the
// objects it has seen the same way.
type Claim struct {
	Key       string
	Namespace string
	Name      string
}

// usagePrefix starts the key of a claim on what an object adds to its
// tenant's sums of resources (UsageClaim), apart from its place in the
// counts.
const usagePrefix = "usage:"

// UsageClaim names the hold of what the object c names (by its count key,
// "pods") adds to its tenant's sums of resources.
func UsageClaim(c Claim) Claim {
	return Claim{Key: usagePrefix + c.Key, Namespace: c.Namespace, Name: c.Name}
}

// CountClaim is the claim UsageClaim made a usage claim of.
func CountClaim(c Claim) Claim {
	return Claim{Key: strings.TrimPrefix(c.Key, usagePrefix), Namespace: c.Namespace, Name: c.Name}
}
