package quota

// Claim names an object by what it counts against: its quota key, its
// namespace ("" for a namespace) and its name. A reservation holds a claim's
// place until the object it names is seen; the cluster view names the
// objects it has seen the same way.
type Claim struct {
	Key       string
	Namespace string
	Name      string
}
