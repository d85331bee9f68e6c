package yamlerr

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Error is a YAML syntax error at a line of the text parsed.
type Error struct {
	// Line counts from 1; 0 when the parser named none.
	Line int
	// Message is the parser's, without "yaml:" and the line.
	Message string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return e.Message
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Message)
}

var located = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// Syntax turns err, a gopkg.in/yaml.v3 error parsing data, into an *Error
// with the line corrected (see the package comment). Errors of other kinds
// (type errors) are not syntax errors: ok is false for them.
func Syntax(err error, data []byte) (_ *Error, ok bool) {
	msg := err.Error()
	if strings.Contains(msg, "cannot unmarshal") {
		return nil, false
	}
	m := located.FindStringSubmatch(msg)
	if m == nil {
		return &Error{Message: strings.TrimPrefix(msg, "yaml: ")}, true
	}
	line, _ := strconv.Atoi(m[1])
	// The parser's own errors ("did not find expected ...") print the
	// zero-based line of the construct they were parsing; the scanner's
	// print a line counted from one. The first line's construct prints as
	// the problem's line instead, which the text's end bounds.
	if strings.HasPrefix(m[2], "did not find expected") && line < lines(data) {
		line++
	}
	return &Error{Line: line, Message: m[2]}, true
}

// lines counts the lines of data, a last line without a newline included.
func lines(data []byte) int {
	n := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}
