package registry

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// pullPolicies are the image pull policies of core/v1.
var pullPolicies = []string{"Always", "IfNotPresent", "Never"}

// registryPrefix is an image reference without tag or digest: a registry
// host (with a dot or a port, or localhost), then path components.
var registryPrefix = regexp.MustCompile(`^(localhost|[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)+|[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)*:[0-9]+)(/[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*)*$`)

func (c checker) images(p string, policy *ImagePolicy) {
	if policy == nil {
		return
	}
	for i, prefix := range policy.AllowedRegistries {
		ip := fmt.Sprintf("%s.allowedRegistries[%d]", p, i)
		if !registryPrefix.MatchString(prefix) {
			host, _, _ := strings.Cut(prefix, "/")
			hint := "write a registry host, optionally followed by a path, such as registry.example.com or ghcr.io/oil, with no tag, digest or scheme"
			if !strings.ContainsAny(host, ".:") && host != "localhost" && !strings.Contains(prefix, "://") {
				hint = fmt.Sprintf("it names no registry host, and references are matched in full (nginx is docker.io/library/nginx); write e.g. docker.io/%s", strings.TrimPrefix(prefix, "docker.io/"))
			}
			c.at(ip, "%q is not an image reference prefix: %s", prefix, hint)
		}
		if host, _, _ := strings.Cut(prefix, "/"); host == "index.docker.io" {
			c.at(ip, "%q names Docker Hub by its old host; references are matched normalized, so write docker.io%s", prefix, strings.TrimPrefix(prefix, host))
		}
	}
	c.regex(p+".allowedRegex", policy.AllowedRegex)
	for i, pull := range policy.AllowedPullPolicies {
		if !slices.Contains(pullPolicies, pull) {
			c.at(fmt.Sprintf("%s.allowedPullPolicies[%d]", p, i), "pull policy must be one of %s, not %q", strings.Join(pullPolicies, ", "), pull)
		}
	}
}

func (c checker) nodePlacement(p string, placement *NodePlacement) {
	if placement == nil {
		return
	}
	for _, key := range sortedKeys(placement.NodeSelector) {
		kp := p + ".nodeSelector." + key
		c.labelKey(kp, key)
		if errs := validation.IsValidLabelValue(placement.NodeSelector[key]); len(errs) > 0 {
			c.at(kp, "%q is not a valid label value: %s", placement.NodeSelector[key], strings.Join(errs, "; "))
		}
	}
	for i, t := range placement.Tolerations {
		c.toleration(fmt.Sprintf("%s.tolerations[%d]", p, i), t)
	}
}

// toleration checks a toleration as the API server would, and more
// strictly: one the tenant's pods get must name a key and an effect, so
// that it tolerates the pool's taint and nothing else.
func (c checker) toleration(p string, t Toleration) {
	if t.Key == "" {
		c.at(p+".key", "a toleration added to every pod must name a key; one without tolerates every taint")
	} else {
		c.labelKey(p+".key", t.Key)
	}
	switch t.Operator {
	case "", "Equal":
		if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
			c.at(p+".value", "%q is not a valid taint value: %s", t.Value, strings.Join(errs, "; "))
		}
	case "Exists":
		if t.Value != "" {
			c.at(p+".value", "operator Exists takes no value, not %q", t.Value)
		}
	default:
		c.at(p+".operator", "operator must be Equal or Exists, not %q", t.Operator)
	}
	switch t.Effect {
	case "NoSchedule", "PreferNoSchedule", "NoExecute":
	case "":
		c.at(p+".effect", "a toleration added to every pod must name an effect (NoSchedule, PreferNoSchedule or NoExecute); one without tolerates every effect")
	default:
		c.at(p+".effect", "effect must be NoSchedule, PreferNoSchedule or NoExecute, not %q", t.Effect)
	}
	if t.TolerationSeconds != nil && t.Effect != "NoExecute" {
		c.at(p+".tolerationSeconds", "tolerationSeconds applies to the NoExecute effect only")
	}
}
