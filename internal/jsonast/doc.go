// Package jsonast decodes JSON text straight into OPA's AST values, in one
// pass: no map[string]any in between, no second walk to convert it. The
// values are those ast.InterfaceToValue gives for the same document decoded
// by encoding/json with UseNumber (numbers keep their text; of duplicate keys
// the last wins; invalid UTF-8 becomes U+FFFD), so the policy cannot tell
// which decoder read its input. Numbers are checked as InterfaceToValue
// checks them (ast.NumberChecked), every one of them, including those of a
// dropped path or of a key given twice, which InterfaceToValue never sees.
//
// String values share one copy of the input's text, or with
// Cache.ParsePaths the input itself, which must then stay unchanged: a
// string kept beyond the value's life keeps the whole input alive
// (strings.Clone it).
//
// A Cache shares the values of the small objects and arrays that many
// documents repeat between the parses that use it, built once from their
// text; such values must only be read.
package jsonast
