package metadata

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrIncompleteListing means List could not vouch for having seen every
// ledger. Garbage collection must then delete nothing (docs/bookkeeper-protocol.md Appendix A,
// pitfall 9).
var ErrIncompleteListing = errors.New("metadata: ledger listing incomplete")

// specialZnodes are the root's children that hold no ledgers
// (AbstractZkLedgerManager.isSpecialZnode); names starting with "ID-" are
// skipped too (a flat-layout id generator's leftovers).
var specialZnodes = []string{availableNode, cookiesNode, layoutNode, instanceIDNode, underRepNode,
	idGenNode, idGenLongNode}

// List walks the ledger tree and returns every ledger id in it, sorted.
//
// Bookies delete the local data of every ledger missing from the list, so
// List is strict: any error (including a directory that vanished mid-walk
// and a cancelled ctx), any child of the root that is neither a special
// znode nor a ledger directory, any node in a ledger directory that is not
// of its level's form, and any ledger found away from the path the layout
// gives its id, stops the walk with an error wrapping ErrIncompleteListing.
// The ids found until then come with the error, for tools that only
// display them; a garbage collector must keep everything.
//
// The listing is not a snapshot: a ledger created during the walk may be
// missing. That is safe for garbage collection as long as the collector
// takes its list of local ledgers before calling List (docs/bookkeeper-protocol.md §8.3).
func (s *Store) List(ctx context.Context) ([]int64, error) {
	top, err := s.children(ctx, s.root)
	if err != nil {
		return nil, incomplete(err)
	}
	var ids []int64
	for _, name := range top {
		if slices.Contains(specialZnodes, name) || strings.HasPrefix(name, idGenPrefix) {
			continue
		}
		levels := treeLevels(name)
		if levels == nil {
			err = fmt.Errorf("unexpected znode %s/%s", s.root, name)
		} else {
			ids, err = s.walk(ctx, s.root+"/"+name, name, levels, ids)
		}
		if err != nil {
			slices.Sort(ids)
			return ids, incomplete(err)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

func incomplete(err error) error { return fmt.Errorf("%w: %w", ErrIncompleteListing, err) }

// walk lists the directory at path, whose name and ancestors' names spell
// digits, and appends the ledgers below it. levels gives the digit count
// of each intermediate level still below path; leaves are "L" + 4 digits.
func (s *Store) walk(ctx context.Context, path, digits string, levels []int, ids []int64) ([]int64, error) {
	names, err := s.children(ctx, path)
	if err != nil {
		return ids, err
	}
	for _, name := range names {
		child := path + "/" + name
		if len(levels) > 0 {
			if !isDigits(name, levels[0]) {
				return ids, fmt.Errorf("unexpected znode %s in the ledger tree", child)
			}
			if ids, err = s.walk(ctx, child, digits+name, levels[1:], ids); err != nil {
				return ids, err
			}
			continue
		}
		leaf, ok := leafDigits(name)
		if !ok {
			return ids, fmt.Errorf("unexpected znode %s in the ledger tree", child)
		}
		id, err := strconv.ParseInt(digits+leaf, 10, 64)
		if err != nil {
			return ids, fmt.Errorf("znode %s does not name a ledger id", child)
		}
		if want := s.layout.Path(s.root, id); want != child {
			return ids, fmt.Errorf("znode %s: the %s layout keeps ledger %d at %s", child, s.layout, id, want)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// children lists path's children, sorted.
func (s *Store) children(ctx context.Context, path string) ([]string, error) {
	names, _, err := s.conn.Children(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", path, err)
	}
	slices.Sort(names)
	return names, nil
}
