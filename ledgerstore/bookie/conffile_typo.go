package bookie

import (
	"fmt"
	"sort"
	"strings"
)

// TypoError is a bookkeeper.conf key keeper does not use that is one edit
// away from one it does: BookKeeper ignores unknown keys, so a misspelt
// journalDirectories would leave the journal where the default puts it.
type TypoError struct {
	Key   string // as written
	Known string // the key meant
}

func (e *TypoError) Error() string {
	return fmt.Sprintf("bookkeeper.conf: unknown key %s; did you mean %s?", e.Key, e.Known)
}

// typos returns a *TypoError for the first of ignored (sorted) that is
// one edit away from a key the parser looked for and did not find.
func (p *confParser) typos(ignored []string) error {
	var known []string
	for k := range p.asked {
		if _, set := p.props[k]; !set {
			known = append(known, k)
		}
	}
	sort.Strings(known)
	for _, key := range ignored {
		for _, k := range known {
			if oneEditApart(key, k) {
				return &TypoError{Key: key, Known: k}
			}
		}
	}
	return nil
}

// oneEditApart reports whether a and b differ only in case or by one
// insertion, deletion, substitution or transposition of adjacent
// letters, ignoring case.
func oneEditApart(a, b string) bool {
	if a == b {
		return false
	}
	a, b = strings.ToLower(a), strings.ToLower(b)
	if a == b {
		return true
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	switch len(b) - len(a) {
	case 0:
		if a[i+1:] == b[i+1:] {
			return true // one substitution
		}
		return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	case 1:
		return a[i:] == b[i+1:]
	}
	return false
}
