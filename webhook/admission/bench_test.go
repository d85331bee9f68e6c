package admission

import (
	"testing"

	"github.com/tenantguard/tenantguard/tests/scale"
)

// BenchmarkDecode decodes the load harness's mixed corpus of validating
// AdmissionReviews, one per op in turn.
func BenchmarkDecode(b *testing.B) {
	corpus := scale.Corpus(1000, 100)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := Decode(corpus[i].Body); err != nil {
			b.Fatal(err)
		}
		i = (i + 1) % len(corpus)
	}
}

// BenchmarkEncode encodes the two common answers as the server writes them:
// allowed, and denied with two reasons and a warning.
func BenchmarkEncode(b *testing.B) {
	for _, c := range []struct {
		name string
		resp *Response
	}{
		{"allowed", Allowed("req-1")},
		{"denied", Denied("req-2", []string{
			`[host-path] hostPath volume "root" (path "/") is not allowed for tenant "t1"; allowed: no hostPath volumes; use emptyDir or a PersistentVolumeClaim`,
			`[privileged] container "sh" is privileged, which is not allowed for tenant "t1"; remove securityContext.privileged`,
		}).WithWarnings([]string{`[host-ports] container "sh" asks for hostPort 80`})},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 1024)
			for b.Loop() {
				if _, err := c.resp.Encode(buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
