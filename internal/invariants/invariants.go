// Package invariants holds assertions about the program's own state.
//
// Assertf is always on and cheap. Checks that cost real work (recomputing a
// digest, walking a tree) are guarded by Enabled, which is true only in
// builds with -tags invariants.
package invariants

import "fmt"

// Assertf panics with the formatted message if cond is false. Use it for
// programmer errors, with the values that show what went wrong.
func Assertf(cond bool, format string, args ...any) {
	if !cond {
		panic(fmt.Sprintf("invariant violated: "+format, args...))
	}
}
