// Package state holds what the admission server decides with: the engine
// built from the last good registry and the last good policy, swapped
// atomically, and the live cluster view. A registry or policy that does not
// load is refused as a whole and the previous engine stays in force, so no
// request ever sees a half-swapped state.
package state
