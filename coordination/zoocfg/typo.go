package zoocfg

import (
	"keeper/internal/typo"
)

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
		if typo.OneEditApart(w.Key, k) && (best == "" || k < best) {
			best = k
		}
	}
	for k := range ignoredKeys {
		if typo.OneEditApart(w.Key, k) && (best == "" || k < best) {
			best = k
		}
	}
	return best, best != ""
}
