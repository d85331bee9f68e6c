// Package jsonast decodes JSON text straight into OPA's AST values, in one
// pass: no map[string]any in between, no second walk to convert it. The
// values are those ast.InterfaceToValue gives for the same document decoded
// by encoding/json with UseNumber (numbers keep their text; of duplicate keys
// the last wins; invalid UTF-8 becomes U+FFFD), so the policy cannot tell
// which decoder read its input.
package jsonast
