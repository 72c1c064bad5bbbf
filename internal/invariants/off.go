//go:build !invariants

package invariants

// Enabled reports whether expensive invariant checks run in this build.
const Enabled = false
