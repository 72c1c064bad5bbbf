// Package typo tells a mistyped configuration key from an unknown one:
// zoo.cfg and bookkeeper.conf readers refuse a key one edit away from a
// key they know, where a silently ignored typo would leave a setting at
// its default.
package typo

import "strings"

// OneEditApart reports whether a and b differ only in case or by one
// insertion, deletion, substitution or transposition of adjacent letters,
// ignoring case. Equal strings are not apart.
func OneEditApart(a, b string) bool {
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
		return a[i:] == b[i+1:] // one insertion
	}
	return false
}
