package irvm

import (
	"cmp"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// native is a built-in's common case answered in place: its result, or nil
// when the arguments are not that case (an operand of the wrong type), which
// topdown's built-in then answers, errors included. A plan calls a few
// built-ins dozens of times an evaluation, and calling topdown's costs
// more than the common case's work: a copy of its BuiltinContext, an output
// callback and an error wrapper (and, for sprintf, fmt's reflection). Each
// native returns what topdown's built-in of the same name (opa/v1/topdown)
// returns for those arguments, which TestNativesAnswerAsTopdownsBuiltins
// holds.
type native func(args []*ast.Term) *ast.Term

// natives are the built-ins answered in place, by name.
var natives = map[string]native{
	ast.Equal.Name:         func(a []*ast.Term) *ast.Term { return ast.InternedTerm(a[0].Equal(a[1])) },
	ast.NotEqual.Name:      func(a []*ast.Term) *ast.Term { return ast.InternedTerm(!a[0].Equal(a[1])) },
	ast.GreaterThan.Name:   func(a []*ast.Term) *ast.Term { return ast.InternedTerm(a[0].Value.Compare(a[1].Value) > 0) },
	ast.GreaterThanEq.Name: func(a []*ast.Term) *ast.Term { return ast.InternedTerm(a[0].Value.Compare(a[1].Value) >= 0) },
	ast.LessThan.Name:      func(a []*ast.Term) *ast.Term { return ast.InternedTerm(a[0].Value.Compare(a[1].Value) < 0) },
	ast.LessThanEq.Name:    func(a []*ast.Term) *ast.Term { return ast.InternedTerm(a[0].Value.Compare(a[1].Value) <= 0) },
	ast.StartsWith.Name:    twoStrings(strings.HasPrefix),
	ast.EndsWith.Name:      twoStrings(strings.HasSuffix),
	ast.Contains.Name:      twoStrings(strings.Contains),
	ast.Count.Name:         count,
	ast.Member.Name:        member,
	ast.ObjectGet.Name:     objectGet,
	ast.IsObject.Name:      isA[ast.Object],
	ast.IsString.Name:      isA[ast.String],
	ast.IsArray.Name:       isA[*ast.Array],
	ast.IsSet.Name:         isA[ast.Set],
	ast.IsBoolean.Name:     isA[ast.Boolean],
	ast.IsNumber.Name:      isA[ast.Number],
	ast.IsNull.Name:        isA[ast.Null],
	ast.Sprintf.Name:       sprintf,
	ast.Concat.Name:        concat,
}

// twoStrings is a built-in of two strings giving a boolean.
func twoStrings(f func(s, t string) bool) native {
	return func(a []*ast.Term) *ast.Term {
		s, ok := a[0].Value.(ast.String)
		t, ok2 := a[1].Value.(ast.String)
		if !ok || !ok2 {
			return nil
		}
		return ast.InternedTerm(f(string(s), string(t)))
	}
}

// count is the count built-in: length's, which the plan's LenStmt uses too.
func count(a []*ast.Term) *ast.Term {
	if n, ok := length(a[0]); ok {
		return ast.InternedTerm(n)
	}
	return nil
}

// member is `x in collection`: a set's member, an array's element or an
// object's value; false for anything else.
func member(a []*ast.Term) *ast.Term {
	x := a[0]
	switch c := a[1].Value.(type) {
	case ast.Set:
		return ast.InternedTerm(c.Contains(x))
	case *ast.Array:
		return ast.InternedTerm(c.Until(x.Equal))
	case ast.Object:
		return ast.InternedTerm(c.Until(func(_, v *ast.Term) bool { return x.Equal(v) }))
	}
	return ast.InternedTerm(false)
}

// objectGet is object.get of a key or of a path (an array of keys, each
// looked up in the value the one before found); a value that is not an
// object is left to topdown.
func objectGet(a []*ast.Term) *ast.Term {
	obj, ok := a[0].Value.(ast.Object)
	if !ok {
		return nil
	}
	path, ok := a[1].Value.(*ast.Array)
	if !ok {
		if k, ok := newStringKey(a[1]); ok {
			return cmp.Or(getString(obj, k), a[2])
		}
		return cmp.Or(obj.Get(a[1]), a[2])
	}
	curr := a[0]
	for i := range path.Len() {
		if curr = pathStep(curr, path, i); curr == nil {
			break
		}
	}
	return cmp.Or(curr, a[2])
}

func isA[T ast.Value](a []*ast.Term) *ast.Term {
	_, ok := a[0].Value.(T)
	return ast.InternedTerm(ok)
}

// sprintf is sprintf of a format whose verbs are %s and %q of strings and
// %d of integers, with no flags or widths, and %%: what fmt.Sprintf, which
// topdown's calls, writes for them. Other verbs and arguments, and a count
// of arguments that is not the verbs', are left to topdown.
func sprintf(a []*ast.Term) *ast.Term {
	format, ok := a[0].Value.(ast.String)
	args, ok2 := a[1].Value.(*ast.Array)
	if !ok || !ok2 {
		return nil
	}
	f := string(format)
	out := make([]byte, 0, len(f)+16*args.Len())
	used := 0
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			out = append(out, f[i])
			continue
		}
		if i++; i == len(f) {
			return nil
		}
		if f[i] == '%' {
			out = append(out, '%')
			continue
		}
		if used == args.Len() {
			return nil
		}
		arg := args.Elem(used).Value
		used++
		switch s, isString := arg.(ast.String); {
		case f[i] == 's' && isString:
			out = append(out, s...)
		case f[i] == 'q' && isString:
			out = strconv.AppendQuote(out, string(s))
		case f[i] == 'd':
			n, ok := arg.(ast.Number)
			if !ok {
				return nil
			}
			v, err := strconv.ParseInt(string(n), 10, 64)
			if err != nil {
				return nil
			}
			out = strconv.AppendInt(out, v, 10)
		default:
			return nil
		}
	}
	if used != args.Len() {
		return nil
	}
	return ast.StringTerm(string(out))
}

// concat is concat of an array of strings; a set, and elements that are
// not strings, are left to topdown.
func concat(a []*ast.Term) *ast.Term {
	sep, ok := a[0].Value.(ast.String)
	arr, ok2 := a[1].Value.(*ast.Array)
	if !ok || !ok2 {
		return nil
	}
	n := len(sep) * max(arr.Len()-1, 0)
	for i := range arr.Len() {
		s, ok := arr.Elem(i).Value.(ast.String)
		if !ok {
			return nil
		}
		n += len(s)
	}
	var b strings.Builder
	b.Grow(n)
	for i := range arr.Len() {
		if i > 0 {
			b.WriteString(string(sep))
		}
		b.WriteString(string(arr.Elem(i).Value.(ast.String)))
	}
	return ast.StringTerm(b.String())
}
