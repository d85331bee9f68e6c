// Package yamlerr locates YAML syntax errors for people: gopkg.in/yaml.v3
// words them "yaml: line N: ...", and for the parser's errors that name the
// construct left open (an unclosed flow list, a block sequence that stops
// being one) N is the line before the construct's, a zero-based line printed
// as is. Syntax returns the line where the construct opens, counted from one
// as editors count, and the message without the "yaml:" prefix.
package yamlerr
