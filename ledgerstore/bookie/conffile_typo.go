package bookie

import (
	"fmt"
	"keeper/internal/typo"
	"sort"
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
			if typo.OneEditApart(key, k) {
				return &TypoError{Key: key, Known: k}
			}
		}
	}
	return nil
}
