package errorfs

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// ParseOps reads operation names joined by "|" (as Op.String writes
// them), plus "all" and "anysync".
func ParseOps(s string) (Op, error) {
	var o Op
	for _, name := range strings.Split(s, "|") {
		switch name {
		case "all":
			o |= OpAll
			continue
		case "anysync":
			o |= OpAnySync
			continue
		}
		found := false
		for i, n := range opNames {
			if n == name {
				o |= 1 << i
				found = true
			}
		}
		if !found {
			return 0, fmt.Errorf("errorfs: unknown operation %q", name)
		}
	}
	return o, nil
}

// errnos are the errors a rule line may name.
var errnos = map[string]syscall.Errno{"EIO": syscall.EIO, "ENOSPC": syscall.ENOSPC, "EROFS": syscall.EROFS,
	"EDQUOT": syscall.EDQUOT, "EFBIG": syscall.EFBIG}

// ParseLine reads one line of a fault file: blank lines and lines starting
// with # are nothing; "space=N" limits space (LimitSpace; -1 lifts it);
// otherwise space-separated key=value fields of a Rule: ops (required,
// ParseOps), path, after, times, err (EIO, ENOSPC, EROFS, EDQUOT, EFBIG).
// For example "ops=sync|syncdata path=log. err=EIO". It returns the rule,
// or the space limit with isSpace set, or neither for a blank line.
func ParseLine(line string) (r Rule, space int64, isSpace, isRule bool, err error) {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return Rule{}, 0, false, false, nil
	}
	if v, ok := strings.CutPrefix(line, "space="); ok {
		space, err = strconv.ParseInt(v, 10, 64)
		if err != nil {
			return Rule{}, 0, false, false, fmt.Errorf("errorfs: %q: bad space: %w", line, err)
		}
		return Rule{}, space, true, false, nil
	}
	for _, field := range strings.Fields(line) {
		k, v, ok := strings.Cut(field, "=")
		if !ok {
			return Rule{}, 0, false, false, fmt.Errorf("errorfs: %q: field %q is not key=value", line, field)
		}
		switch k {
		case "ops":
			r.Ops, err = ParseOps(v)
		case "path":
			r.PathContains = v
		case "after":
			r.After, err = strconv.Atoi(v)
		case "times":
			r.Times, err = strconv.Atoi(v)
		case "err":
			e, ok := errnos[v]
			if !ok {
				err = fmt.Errorf("unknown errno %q", v)
			}
			r.Err = e
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return Rule{}, 0, false, false, fmt.Errorf("errorfs: %q: %w", line, err)
		}
	}
	if r.Ops == 0 {
		return Rule{}, 0, false, false, fmt.Errorf("errorfs: %q: no ops", line)
	}
	if r.After < 0 || r.Times < 0 {
		return Rule{}, 0, false, false, fmt.Errorf("errorfs: %q: negative count", line)
	}
	return r, 0, false, true, nil
}

// Load replaces f's rules and space limit with those of a fault file's
// text (ParseLine, line by line). On an error f is left unchanged.
func (f *FS) Load(text string) error {
	var rules []Rule
	space := int64(-1)
	for _, line := range strings.Split(text, "\n") {
		r, sp, isSpace, isRule, err := ParseLine(line)
		switch {
		case err != nil:
			return err
		case isSpace:
			space = sp
		case isRule:
			rules = append(rules, r)
		}
	}
	f.Reset()
	for _, r := range rules {
		f.Add(r)
	}
	f.LimitSpace(space)
	return nil
}
