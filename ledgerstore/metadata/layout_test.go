package metadata

import (
	"errors"
	"math"
	"testing"
)

func TestLedgerPath(t *testing.T) {
	for _, tc := range []struct {
		id         int64
		hier, long string
	}{
		{0, "/ledgers/00/0000/L0000", "/ledgers/000/0000/0000/0000/L0000"},
		{1, "/ledgers/00/0000/L0001", "/ledgers/000/0000/0000/0000/L0001"},
		{9999, "/ledgers/00/0000/L9999", "/ledgers/000/0000/0000/0000/L9999"},
		{10000, "/ledgers/00/0001/L0000", "/ledgers/000/0000/0000/0001/L0000"},
		{1234567890, "/ledgers/12/3456/L7890", "/ledgers/000/0000/0012/3456/L7890"},
		{math.MaxInt32 - 1, "/ledgers/21/4748/L3646", "/ledgers/000/0000/0021/4748/L3646"},
		// From 2^31-1 on, the hierarchical layout switches to the long form.
		{math.MaxInt32, "/ledgers/000/0000/0021/4748/L3647", "/ledgers/000/0000/0021/4748/L3647"},
		{1 << 31, "/ledgers/000/0000/0021/4748/L3648", "/ledgers/000/0000/0021/4748/L3648"},
		{1<<32 | 5, "/ledgers/000/0000/0042/9496/L7301", "/ledgers/000/0000/0042/9496/L7301"},
		{math.MaxInt64, "/ledgers/922/3372/0368/5477/L5807", "/ledgers/922/3372/0368/5477/L5807"},
	} {
		if got := LayoutHierarchical.Path("/ledgers", tc.id); got != tc.hier {
			t.Errorf("hierarchical Path(%d) = %s, want %s", tc.id, got, tc.hier)
		}
		if got := LayoutLongHierarchical.Path("/ledgers", tc.id); got != tc.long {
			t.Errorf("long hierarchical Path(%d) = %s, want %s", tc.id, got, tc.long)
		}
	}
	if got := LayoutHierarchical.Path("/a/b", 3); got != "/a/b/00/0000/L0003" {
		t.Errorf("Path under /a/b = %s", got)
	}
}

func TestLayoutData(t *testing.T) {
	if got := string(LayoutHierarchical.LayoutData()); got != "2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1" {
		t.Errorf("hierarchical LAYOUT = %q", got)
	}
	if got := string(LayoutLongHierarchical.LayoutData()); got != "2\norg.apache.bookkeeper.meta.LongHierarchicalLedgerManagerFactory:1" {
		t.Errorf("long hierarchical LAYOUT = %q", got)
	}
	for _, tc := range []struct {
		layout   Layout
		data     string
		mismatch bool // ErrLayoutMismatch rather than unreadable
		ok       bool
	}{
		{LayoutHierarchical, "2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1", false, true},
		{LayoutHierarchical, "1\nhierarchical:1", false, true},
		{LayoutLongHierarchical, "2\norg.apache.bookkeeper.meta.LongHierarchicalLedgerManagerFactory:1", false, true},
		{LayoutHierarchical, "2\norg.apache.bookkeeper.meta.LongHierarchicalLedgerManagerFactory:1", true, false},
		{LayoutLongHierarchical, "2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1", true, false},
		{LayoutHierarchical, "2\norg.apache.bookkeeper.meta.FlatLedgerManagerFactory:1", true, false},
		{LayoutHierarchical, "1\nflat:1", true, false},
		{LayoutHierarchical, "3\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1", false, false},
		{LayoutHierarchical, "2", false, false},
		{LayoutHierarchical, "2\nno-version", false, false},
		{LayoutHierarchical, "", false, false},
	} {
		err := tc.layout.checkLayoutData([]byte(tc.data))
		if (err == nil) != tc.ok || errors.Is(err, ErrLayoutMismatch) != tc.mismatch {
			t.Errorf("%v: checkLayoutData(%q) = %v", tc.layout, tc.data, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{}, true},
		{Config{Root: "/a/ledgers", Layout: LayoutLongHierarchical}, true},
		{Config{Root: "ledgers"}, false},
		{Config{Root: "/ledgers/"}, false},
		{Config{Root: "/a//b"}, false},
		{Config{Layout: 7}, false},
		{Config{RetryBackoff: -1}, false},
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v.Validate() = %v", tc.cfg, err)
		}
	}
}
