package registry

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a registry, with where it is.
type Problem struct {
	File    string
	Line    int
	Path    string
	Message string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
		}
		b.WriteString(": ")
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Error is a registry that was rejected, with every problem found in it.
type Error struct {
	File     string
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, 0, len(e.Problems)+1)
	noun := "problems"
	if len(e.Problems) == 1 {
		noun = "problem"
	}
	lines = append(lines, fmt.Sprintf("registry %s is invalid (%d %s):", e.File, len(e.Problems), noun))
	for _, p := range e.Problems {
		lines = append(lines, "  "+p.String())
	}
	return strings.Join(lines, "\n")
}
