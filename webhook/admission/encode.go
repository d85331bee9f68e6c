package admission

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Encode is the AdmissionReview answer as encoding/json writes it, byte for
// byte, appended to b: every field of a Response is written without
// reflection. A response with status fields Denied never sets (details,
// list metadata, a kind) goes through encoding/json instead.
func (r *Response) Encode(b []byte) ([]byte, error) {
	if s := r.Result; s != nil && (s.Details != nil || s.ListMeta != (metav1.ListMeta{}) || s.TypeMeta != (metav1.TypeMeta{})) {
		out, err := json.Marshal(r.Review())
		return append(b, out...), err
	}
	b = append(b, `{"kind":`...)
	b = appendString(b, Kind)
	b = append(b, `,"apiVersion":`...)
	b = appendString(b, Version)
	b = append(b, `,"response":{"uid":`...)
	b = appendString(b, string(r.UID))
	b = append(b, `,"allowed":`...)
	b = strconv.AppendBool(b, r.Allowed)
	if s := r.Result; s != nil {
		b = append(b, `,"status":{"metadata":{}`...)
		b = appendField(b, "status", s.Status)
		b = appendField(b, "message", s.Message)
		b = appendField(b, "reason", string(s.Reason))
		if s.Code != 0 {
			b = append(b, `,"code":`...)
			b = strconv.AppendInt(b, int64(s.Code), 10)
		}
		b = append(b, '}')
	}
	if len(r.Patch) > 0 {
		b = append(b, `,"patch":"`...)
		b = base64.StdEncoding.AppendEncode(b, r.Patch)
		b = append(b, '"')
	}
	if r.PatchType != nil {
		b = append(b, `,"patchType":`...)
		b = appendString(b, string(*r.PatchType))
	}
	if len(r.AuditAnnotations) > 0 {
		b = append(b, `,"auditAnnotations":{`...)
		keys := make([]string, 0, len(r.AuditAnnotations))
		for k := range r.AuditAnnotations {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, r.AuditAnnotations[k])
		}
		b = append(b, '}')
	}
	if len(r.Warnings) > 0 {
		b = append(b, `,"warnings":[`...)
		for i, w := range r.Warnings {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, w)
		}
		b = append(b, ']')
	}
	return append(b, "}}"...), nil
}

// appendField appends ,"name":value for a string field with omitempty.
func appendField(b []byte, name, value string) []byte {
	if value == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendString(b, value)
}

const hex = "0123456789abcdef"

// appendString appends s quoted as encoding/json quotes it: HTML characters,
// control characters, U+2028 and U+2029 escaped; bytes that are not UTF-8
// written as U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
