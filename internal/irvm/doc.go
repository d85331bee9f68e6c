// Package irvm evaluates the rule library from OPA's query plan (its
// intermediate representation, package ir) instead of walking the Rego AST.
//
// OPA's planner turns a query and its modules into straight-line blocks of
// statements over local variables: the same plan OPA compiles to
// WebAssembly. Run in Go over OPA's own values, a plan skips the work
// topdown repeats on every request: unification, the rule index, and the
// bookkeeping for backtracking. Built-in functions are OPA's own, called
// through topdown's registry, so every built-in behaves as it does in OPA.
//
// The semantics of each statement are those of OPA's WebAssembly compiler,
// the reference consumer of plans: a statement that is undefined breaks out
// of its block; a break of index i leaves i+1 enclosing blocks, where a
// scan's body and the scan itself count as one each; rules without
// arguments are computed at most once per evaluation. Built-in errors make
// the call undefined, as in topdown without strict built-in errors;
// conflicting values for a complete rule or an object key are errors.
//
// New resolves each call once, folds literals of constants into values
// built once (fold.go), and compiles each statement into a closure over its
// decoded operands (compile.go), so that running one does not switch on its
// type or its operands'; collections made empty share one value until their
// first element. A literal the plan may add to gets a term of its own per
// evaluation, whose shared value is copied before the first change; any
// other shares one term (mutable.go). So no evaluation sees another's.
//
// Most lookups have a key the plan spells out: such a key is hashed once,
// when compiled, and looked up in OPA's object through a layout of the
// evaluator's own (object.go), used only when OPA's is found alike at
// start, as for arrays grown in place (array.go).
package irvm
