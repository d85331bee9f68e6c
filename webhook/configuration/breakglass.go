package configuration

import (
	"encoding/json"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// breakGlassInfix marks the name of a break-glass webhook.
const breakGlassInfix = "break-glass."

// variant is one webhook of a name: its name's infix, failure policy and
// match conditions.
type variant struct {
	// infix follows the name's first label: NAME.INFIXtenantguard.io
	infix         string
	failurePolicy *admissionregistrationv1.FailurePolicyType
	conditions    []admissionregistrationv1.MatchCondition
}

// variants are the webhooks each name gets: one, without
// Options.BreakGlassGroups; with them, one for everyone else and one for
// those groups only, with failurePolicy Ignore (their requests are decided
// like everyone's while tenantguard answers, and let through when it does
// not), named NAME.break-glass.tenantguard.io.
func (o *Options) variants() []variant {
	if len(o.BreakGlassGroups) == 0 {
		return []variant{{failurePolicy: o.FailurePolicy, conditions: MatchConditions}}
	}
	quoted, _ := json.Marshal(o.BreakGlassGroups) // a JSON list of strings is a CEL list
	member := fmt.Sprintf("request.userInfo.groups.exists(g, g in %s)", quoted)
	with := func(c admissionregistrationv1.MatchCondition) []admissionregistrationv1.MatchCondition {
		return append(append([]admissionregistrationv1.MatchCondition{}, MatchConditions...), c)
	}
	ignore := admissionregistrationv1.Ignore
	return []variant{
		{failurePolicy: o.FailurePolicy, conditions: with(admissionregistrationv1.MatchCondition{Name: "not-break-glass", Expression: "!" + member})},
		{infix: breakGlassInfix, failurePolicy: &ignore, conditions: with(admissionregistrationv1.MatchCondition{Name: "break-glass", Expression: member})},
	}
}
