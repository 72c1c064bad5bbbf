package metadata

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrLayoutMismatch means the tree's LAYOUT znode names a ledger manager
// other than the configured Layout, so this store would look for ledgers
// where the cluster's other clients do not put them.
var ErrLayoutMismatch = errors.New("metadata: the ledgers tree uses another layout")

// Layout is a scheme that maps ledger ids to znode paths: one of
// BookKeeper's ledger managers (docs/bookkeeper-protocol.md §5.3).
type Layout int

const (
	// LayoutHierarchical is BookKeeper's default, HierarchicalLedgerManager:
	// an id below 2^31-1 is written as ten digits split 2-4-4
	// (root/00/0000/L0001), a larger one as nineteen digits split 3-4-4-4-4
	// (root/000/0000/0002/1474/L8365). Both trees live under the root.
	LayoutHierarchical Layout = iota
	// LayoutLongHierarchical is LongHierarchicalLedgerManager: every id in
	// the nineteen-digit 3-4-4-4-4 form.
	LayoutLongHierarchical
)

// Ledger manager factories as LAYOUT names them (LedgerLayout format 2),
// and their version.
const (
	hierarchicalFactory     = "org.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory"
	longHierarchicalFactory = "org.apache.bookkeeper.meta.LongHierarchicalLedgerManagerFactory"
	managerVersion          = 1
	layoutFormatVersion     = 2
	// hierarchicalType is how format 1 layouts name the hierarchical manager.
	hierarchicalType = "hierarchical"
)

// String names the layout as BookKeeper's metadata service URIs do.
func (l Layout) String() string {
	switch l {
	case LayoutHierarchical:
		return "hierarchical"
	case LayoutLongHierarchical:
		return "longhierarchical"
	}
	return fmt.Sprintf("Layout(%d)", int(l))
}

func (l Layout) valid() bool { return l == LayoutHierarchical || l == LayoutLongHierarchical }

func (l Layout) factoryClass() string {
	if l == LayoutLongHierarchical {
		return longHierarchicalFactory
	}
	return hierarchicalFactory
}

// LayoutData returns the LAYOUT znode's content for l, as BookKeeper
// writes it when it formats a cluster: the layout format version, a
// newline, then the ledger manager factory class and its version, e.g.
// "2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1".
func (l Layout) LayoutData() []byte {
	return fmt.Appendf(nil, "%d\n%s:%d", layoutFormatVersion, l.factoryClass(), managerVersion)
}

// checkLayoutData reports whether a LAYOUT znode's content names l. Format
// 1 layouts name the manager by type ("hierarchical") instead of class.
func (l Layout) checkLayoutData(data []byte) error {
	lines := strings.Split(string(data), "\n")
	format, err := strconv.Atoi(lines[0])
	if err != nil || format < 1 || format > layoutFormatVersion || len(lines) < 2 {
		return fmt.Errorf("metadata: LAYOUT %q: unreadable", data)
	}
	manager, _, ok := strings.Cut(lines[1], ":")
	if !ok {
		return fmt.Errorf("metadata: LAYOUT %q: no manager version", data)
	}
	if manager == l.factoryClass() || format == 1 && manager == hierarchicalType && l == LayoutHierarchical {
		return nil
	}
	return fmt.Errorf("%w: LAYOUT names %s, configured %s", ErrLayoutMismatch, manager, l)
}

// maxShortID is the first ledger id the hierarchical layout writes in the
// long form, and the first id the short id generator refuses: Java's
// Integer.MAX_VALUE.
const maxShortID = math.MaxInt32

// Path returns the znode of ledger id's metadata under root (docs/bookkeeper-protocol.md §5.3).
// The id must not be negative.
func (l Layout) Path(root string, id int64) string {
	if l == LayoutHierarchical && id < maxShortID {
		s := fmt.Sprintf("%010d", id)
		return root + "/" + s[0:2] + "/" + s[2:6] + "/L" + s[6:10]
	}
	s := fmt.Sprintf("%019d", id)
	return root + "/" + s[0:3] + "/" + s[3:7] + "/" + s[7:11] + "/" + s[11:15] + "/L" + s[15:19]
}

// treeLevels returns the widths of the intermediate levels below a
// top-level ledger directory named top (two or three digits), or nil if
// top is not one.
func treeLevels(top string) []int {
	switch {
	case isDigits(top, 2):
		return []int{4}
	case isDigits(top, 3):
		return []int{4, 4, 4}
	}
	return nil
}

// leafDigits returns the four digits of a leaf's name "L" + 4 digits.
func leafDigits(name string) (string, bool) {
	if len(name) == 5 && name[0] == 'L' && isDigits(name[1:], 4) {
		return name[1:], true
	}
	return "", false
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
