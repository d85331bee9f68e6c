package engine

import (
	"sort"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tenantguard/tenantguard/internal/admission"
)

// Response turns a decision into the AdmissionReview response: denials as the
// status message, warn-mode violations as warnings, dryrun ones as audit
// annotations (dryrun-RULE), and the mutation patch.
func (d *Decision) Response(uid types.UID) *admission.Response {
	var resp *admission.Response
	if d.Allowed {
		resp = admission.Allowed(uid)
	} else {
		resp = admission.Denied(uid, Messages(d.Deny))
	}
	annotations := map[string]string{}
	for _, v := range d.DryRun {
		annotations["dryrun-"+v.ID] = v.String()
	}
	return resp.WithPatch(d.Patch).WithWarnings(Messages(d.Warn)).WithAuditAnnotations(annotations)
}

// Messages are the violations as "[rule-id] sentence" lines, sorted.
func Messages(vs []Violation) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.String()
	}
	sort.Strings(out)
	return out
}
