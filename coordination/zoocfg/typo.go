package zoocfg

import "strings"

// unknownKeyMessage is the message of Parse's warning for a key it does
// not know (parse.go); Typo looks for it.
const unknownKeyMessage = "unknown key; ignored"

// Typo reports whether w is about a key that ZooKeeper does not know but
// that is one edit (a letter added, dropped, changed, or two swapped, or
// only its case) away from one it does, and returns that key. ZooKeeper
// turns an unknown key into a system property and runs on, so a typo
// such as tickTIme silently leaves tickTime at its default; a caller
// refuses such a file instead.
func Typo(w Warning) (known string, ok bool) {
	if w.Message != unknownKeyMessage {
		return "", false
	}
	best := ""
	for k := range settings {
		if oneEditApart(w.Key, k) && (best == "" || k < best) {
			best = k
		}
	}
	for k := range ignoredKeys {
		if oneEditApart(w.Key, k) && (best == "" || k < best) {
			best = k
		}
	}
	return best, best != ""
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
	switch len(b) - len(a) {
	case 0:
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		if a[i+1:] == b[i+1:] {
			return true // one substitution
		}
		return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	case 1:
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		return a[i:] == b[i+1:]
	}
	return false
}
