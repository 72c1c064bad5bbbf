//go:build chaos

package failpoint

import (
	"fmt"
	"sync/atomic"
)

// Enabled reports whether failpoints can fire in this build.
const Enabled = true

// armedRule is a rule with its hit count.
type armedRule struct {
	Rule
	hits atomic.Int64
}

var (
	armed   atomic.Pointer[map[string]*armedRule]
	actions atomic.Pointer[Actions]
)

// SetActions installs how kill and sleep act on the process.
func SetActions(a Actions) { actions.Store(&a) }

// Load arms exactly the rules in lines (Parse; blank lines and # comments
// are skipped), replacing every rule armed before and restarting the
// counts. On an error nothing changes.
func Load(lines []string) error {
	rules, err := ParseLines(lines)
	if err != nil {
		return err
	}
	m := make(map[string]*armedRule, len(rules))
	for _, r := range rules {
		if _, dup := m[r.Name]; dup {
			return fmt.Errorf("%w: failpoint %s armed twice", ErrSyntax, r.Name)
		}
		m[r.Name] = &armedRule{Rule: r}
	}
	armed.Store(&m)
	return nil
}

// Hit marks the failpoint name: if a rule arms it, and the hit is one the
// rule fires on, its action happens now.
func Hit(name string) {
	m := armed.Load()
	if m == nil {
		return
	}
	r := (*m)[name]
	if r == nil {
		return
	}
	n := r.hits.Add(1) - int64(r.After)
	if n <= 0 || (r.Count > 0 && n > int64(r.Count)) {
		return
	}
	fire(r.Rule)
}

func fire(r Rule) {
	a := actions.Load()
	switch r.Action {
	case Kill:
		if a != nil && a.Kill != nil {
			a.Kill(r.Name)
		}
		panic(fmt.Sprintf("failpoint %s: kill (no Kill action installed, or it returned)", r.Name))
	case Sleep:
		if a != nil && a.Sleep != nil {
			a.Sleep(r.Name, r.Sleep)
		}
	case Panic:
		panic(fmt.Sprintf("failpoint %s fired", r.Name))
	}
}
