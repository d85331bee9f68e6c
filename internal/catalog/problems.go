package catalog

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// problem is one thing wrong with a library, at a file and line (0: none).
type problem struct {
	file string
	line int
	msg  string
}

func (p problem) String() string {
	switch {
	case p.file == "":
		return p.msg
	case p.line == 0:
		return p.file + ": " + p.msg
	}
	return fmt.Sprintf("%s:%d: %s", p.file, p.line, p.msg)
}

// problems collects what is wrong with a library.
type problems struct{ list []problem }

func (p *problems) add(loc *ast.Location, format string, args ...any) {
	pr := problem{msg: fmt.Sprintf(format, args...)}
	if loc != nil {
		pr.file, pr.line = loc.File, loc.Row
	}
	p.list = append(p.list, pr)
}

// at records a problem of a file that is not Rego (a CEL translation).
func (p *problems) at(file string, line int, format string, args ...any) {
	p.list = append(p.list, problem{file, line, fmt.Sprintf(format, args...)})
}

// addError records an error, one problem per OPA error it holds.
func (p *problems) addError(err error) {
	var errs ast.Errors
	if errors.As(err, &errs) {
		for _, e := range errs {
			p.add(e.Location, "%s", e.Message)
		}
		return
	}
	p.list = append(p.list, problem{msg: err.Error()})
}

func (p *problems) empty() bool { return len(p.list) == 0 }

// err is every problem, by file and line, as one error; nil when none.
func (p *problems) err() error {
	if p.empty() {
		return nil
	}
	list := slices.Clone(p.list)
	slices.SortStableFunc(list, func(a, b problem) int {
		return cmp.Or(cmp.Compare(a.file, b.file), cmp.Compare(a.line, b.line))
	})
	list = slices.Compact(list)
	if len(list) == 1 {
		return errors.New(list[0].String())
	}
	lines := make([]string, len(list))
	for i, pr := range list {
		lines[i] = pr.String()
	}
	return fmt.Errorf("%d problems:\n  %s", len(lines), strings.Join(lines, "\n  "))
}
