package bookie

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Znode names under the ledgers root that are not ledger metadata
// (BookKeeper's AbstractZkLedgerManager.isSpecialZnode).
var specialZnodes = map[string]bool{
	"available":        true,
	"cookies":          true,
	"LAYOUT":           true,
	"INSTANCEID":       true,
	"underreplication": true,
	"idgen":            true,
	"idgen-long":       true,
}

// LedgerPath returns the znode of a ledger's metadata under the
// hierarchical ledger manager, BookKeeper's default (spec §5.3): an id
// below 2^31-1 as ten digits split 2-4-4 (root/00/0000/L0001), a larger
// one as nineteen digits split 3-4-4-4-4.
func LedgerPath(root string, ledgerID int64) string {
	if ledgerID < math.MaxInt32 {
		s := fmt.Sprintf("%010d", ledgerID)
		return fmt.Sprintf("%s/%s/%s/L%s", root, s[0:2], s[2:6], s[6:10])
	}
	s := fmt.Sprintf("%019d", ledgerID)
	return fmt.Sprintf("%s/%s/%s/%s/%s/L%s", root, s[0:3], s[3:7], s[7:11], s[11:15], s[15:19])
}

// childLister lists a znode's children.
type childLister interface {
	children(path string) ([]string, error)
}

// listLedgers walks the ledger metadata under root, in both hierarchical
// forms (and flat `L<digits>` children of the root, which an old flat
// ledger manager leaves), and returns every ledger id it finds.
//
// Garbage collection deletes local data for every ledger missing from
// this set, so the walk is strict (spec Appendix A item 9, YBK-183): any
// error, and any node under a ledger level whose name is not of that
// level's form, fails the whole listing. Children of the root that are
// neither special znodes nor ledger levels are skipped, as BookKeeper
// skips them.
func listLedgers(l childLister, root string) (map[int64]bool, error) {
	top, err := l.children(root)
	if err != nil {
		return nil, fmt.Errorf("bookie: list %s: %w", root, err)
	}
	live := make(map[int64]bool)
	for _, name := range top {
		switch {
		case specialZnodes[name] || strings.HasPrefix(name, "ID-"):
		case isDigits(name, 2):
			err = walkLevels(l, root+"/"+name, name, []int{4}, live)
		case isDigits(name, 3):
			err = walkLevels(l, root+"/"+name, name, []int{4, 4, 4}, live)
		case strings.HasPrefix(name, "L") && isDigits(name[1:], len(name)-1) && len(name) > 1:
			var id int64
			id, err = parseLedgerDigits(name[1:], root+"/"+name)
			live[id] = true
		}
		if err != nil {
			return nil, err
		}
	}
	return live, nil
}

// walkLevels descends the intermediate levels of a hierarchical path
// whose digits so far are prefix; levels gives the width of each
// remaining intermediate level. Leaves are L followed by four digits.
func walkLevels(l childLister, path, prefix string, levels []int, live map[int64]bool) error {
	kids, err := l.children(path)
	if err != nil {
		return fmt.Errorf("bookie: list %s: %w", path, err)
	}
	for _, name := range kids {
		child := path + "/" + name
		if len(levels) > 0 {
			if !isDigits(name, levels[0]) {
				return fmt.Errorf("bookie: unexpected znode %s in the ledger tree", child)
			}
			if err := walkLevels(l, child, prefix+name, levels[1:], live); err != nil {
				return err
			}
			continue
		}
		if len(name) != 5 || name[0] != 'L' || !isDigits(name[1:], 4) {
			return fmt.Errorf("bookie: unexpected znode %s in the ledger tree", child)
		}
		id, err := parseLedgerDigits(prefix+name[1:], child)
		if err != nil {
			return err
		}
		live[id] = true
	}
	return nil
}

// parseLedgerDigits parses a ledger id's decimal digits.
func parseLedgerDigits(digits, path string) (int64, error) {
	id, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("bookie: ledger znode %s does not name a ledger id", path)
	}
	return id, nil
}

// isDigits reports whether s is exactly n decimal digits.
func isDigits(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
