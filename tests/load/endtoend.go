package load

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// endToEndPrefix names the results of tests/e2e's BenchmarkCreateEndToEnd:
// sub-benchmarks pod=SHAPE/setup=SETUP.
const endToEndPrefix = "BenchmarkCreateEndToEnd/"

// EndToEnd is one line of the end-to-end comparison: a tenant's pod create
// on the real API server under one admission setup.
type EndToEnd struct {
	Pod, Setup string
	// Mean, P50 and P99 are the client's latencies from request to answer.
	Mean, P50, P99 time.Duration
	// Admission is the API server's own admission time per create (its
	// mutating and validating steps).
	Admission time.Duration
}

// EndToEnd are the end-to-end lines among the Go benchmarks, in their order.
func (r *Report) EndToEnd() []EndToEnd {
	var out []EndToEnd
	for _, m := range r.Micro {
		rest, ok := strings.CutPrefix(m.Name, endToEndPrefix)
		if !ok {
			continue
		}
		line := EndToEnd{
			Mean:      time.Duration(m.Metrics["ns/op"]),
			P50:       time.Duration(m.Metrics["p50-µs"] * float64(time.Microsecond)),
			P99:       time.Duration(m.Metrics["p99-µs"] * float64(time.Microsecond)),
			Admission: time.Duration(m.Metrics["admission-µs/op"] * float64(time.Microsecond)),
		}
		for part := range strings.SplitSeq(rest, "/") {
			key, value, _ := strings.Cut(part, "=")
			switch key {
			case "pod":
				line.Pod = value
			case "setup":
				line.Setup = value
			}
		}
		out = append(out, line)
	}
	return out
}

// WriteEndToEnd writes the end-to-end comparison, with what it measures.
func (r *Report) WriteEndToEnd(w io.Writer) {
	_, _ = fmt.Fprintln(w, "A tenant's pod create on the test control plane's real kube-apiserver and etcd (`make control-plane`), "+
		"timed by the client from request to answer, one request at a time, with each setup alone on the API server: "+
		"`none`, no policy; `tenantguard`, its mutating and validating webhooks (`tenantguard serve` over HTTPS on loopback, "+
		"the small registry of the e2e tests); `vap`, the exported ValidatingAdmissionPolicies (the rules CEL can express: "+
		"no tenant-wide counts or sums); `vap+map`, those and the exported MutatingAdmissionPolicies that set the defaults. "+
		"The `complete` pod names what the tenant's rules ask for (registry, pull policy, PriorityClass, RuntimeClass, node pool); "+
		"the `defaulted` pod leaves the PriorityClass, RuntimeClass and node pool to admission, and is measured where a setup sets them, and with `none`, which stores it without them. "+
		"`admission` is the API server's own figure: its `apiserver_admission_step_admission_duration_seconds`, "+
		"mutating and validating steps summed, per create. Command: `go test -run '^$' -bench CreateEndToEnd ./tests/e2e/` (see the Makefile's bench target).")
	_, _ = fmt.Fprintln(w)
	_, _ = fmt.Fprintln(w, "| pod | setup | mean | p50 | p99 | admission per create |")
	_, _ = fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- |")
	for _, l := range r.EndToEnd() {
		_, _ = fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", l.Pod, l.Setup, round(l.Mean), round(l.P50), round(l.P99), round(l.Admission))
	}
}
