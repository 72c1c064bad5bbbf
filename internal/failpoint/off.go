//go:build !chaos

package failpoint

import "fmt"

// Enabled reports whether failpoints can fire in this build.
const Enabled = false

// Hit does nothing in a release build; the compiler removes the call.
func Hit(string) {}

// SetActions does nothing in a release build.
func SetActions(Actions) {}

// Load refuses any rule in a release build: only a binary built with the
// chaos tag has failpoints. Blank lines and comments are accepted.
func Load(lines []string) error {
	rules, err := ParseLines(lines)
	if err != nil {
		return err
	}
	if len(rules) > 0 {
		return fmt.Errorf("failpoint: %d rule(s) given to a binary built without the chaos tag", len(rules))
	}
	return nil
}
