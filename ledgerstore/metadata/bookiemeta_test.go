package metadata

import (
	"errors"
	"testing"

	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/metadata/metadatatest"
)

func TestCookies(t *testing.T) {
	s, conn := keeperStore(t, Config{Root: "/bk/ledgers"})
	ctx := testContext(t)
	if ids, err := s.CookieBookies(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("CookieBookies before any cookie = %v, %v", ids, err)
	}
	if _, _, err := s.Cookie(ctx, "b1:3181"); !errors.Is(err, ErrNoCookie) {
		t.Fatalf("Cookie of a new bookie: %v, want ErrNoCookie", err)
	}
	if v, err := s.CreateCookie(ctx, "b1:3181", []byte("5\nbookieHost: \"b1:3181\"\n")); err != nil || v != 0 {
		t.Fatalf("CreateCookie = %d, %v", v, err)
	}
	if s.CookiePath("b1:3181") != "/bk/ledgers/cookies/b1:3181" {
		t.Fatalf("CookiePath = %s", s.CookiePath("b1:3181"))
	}
	data, v, err := s.Cookie(ctx, "b1:3181")
	if err != nil || v != 0 || string(data) != "5\nbookieHost: \"b1:3181\"\n" {
		t.Fatalf("Cookie = %q, %d, %v", data, v, err)
	}
	if raw, _, err := conn.Get(t.Context(), "/bk/ledgers/cookies/b1:3181"); err != nil || string(raw) != string(data) {
		t.Fatalf("the cookie znode holds %q, %v", raw, err)
	}
	if _, err := s.CreateCookie(ctx, "b1:3181", []byte("other")); !errors.Is(err, ErrCookieExists) {
		t.Fatalf("second CreateCookie: %v, want ErrCookieExists", err)
	}
	if _, err := s.CreateCookie(ctx, "b2:3181", nil); err != nil {
		t.Fatalf("CreateCookie of a second bookie: %v", err)
	}
	if ids, err := s.CookieBookies(ctx); err != nil || len(ids) != 2 || ids[0] != "b1:3181" || ids[1] != "b2:3181" {
		t.Fatalf("CookieBookies = %v, %v", ids, err)
	}
	for _, bad := range []ledger.BookieID{"", "readonly", "a/b"} {
		if _, _, err := s.Cookie(ctx, bad); err == nil {
			t.Errorf("Cookie(%q) succeeded", bad)
		}
		if _, err := s.CreateCookie(ctx, bad, nil); err == nil {
			t.Errorf("CreateCookie(%q) succeeded", bad)
		}
	}
}

func TestParseLayoutData(t *testing.T) {
	for _, tc := range []struct {
		data     string
		want     Layout
		mismatch bool // an error wrapping ErrLayoutMismatch
		bad      bool // any other error
	}{
		{data: string(LayoutHierarchical.LayoutData()), want: LayoutHierarchical},
		{data: string(LayoutLongHierarchical.LayoutData()), want: LayoutLongHierarchical},
		{data: "2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1", want: LayoutHierarchical},
		{data: "1\nhierarchical:1", want: LayoutHierarchical},
		{data: "2\norg.apache.bookkeeper.meta.FlatLedgerManagerFactory:1", mismatch: true},
		{data: "1\nflat:1", mismatch: true},
		{data: "", bad: true},
		{data: "x\nhierarchical:1", bad: true},
		{data: "3\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1", bad: true},
		{data: "2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory", bad: true},
		{data: "2", bad: true},
	} {
		got, err := ParseLayoutData([]byte(tc.data))
		switch {
		case tc.mismatch || tc.bad:
			if err == nil || errors.Is(err, ErrLayoutMismatch) != tc.mismatch {
				t.Errorf("ParseLayoutData(%q) = %v, %v; want an error (mismatch %v)", tc.data, got, err, tc.mismatch)
			}
		case err != nil || got != tc.want:
			t.Errorf("ParseLayoutData(%q) = %v, %v; want %v", tc.data, got, err, tc.want)
		}
	}
}

func TestStoredLayout(t *testing.T) {
	conn := dial(t, metadatatest.KeeperAddr(t))
	ctx := testContext(t)
	probe := newTestStore(t, conn, Config{})
	if l, found, err := probe.StoredLayout(ctx); found || err != nil {
		t.Fatalf("StoredLayout of no tree = %v, %v, %v", l, found, err)
	}
	long := newTestStore(t, conn, Config{Layout: LayoutLongHierarchical})
	if err := long.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if l, found, err := probe.StoredLayout(ctx); l != LayoutLongHierarchical || !found || err != nil {
		t.Fatalf("StoredLayout = %v, %v, %v; want longhierarchical", l, found, err)
	}
	if _, err := conn.Set(t.Context(), "/ledgers/LAYOUT", []byte("1\nflat:1"), -1); err != nil {
		t.Fatal(err)
	}
	if _, found, err := probe.StoredLayout(ctx); found || !errors.Is(err, ErrLayoutMismatch) {
		t.Fatalf("StoredLayout of a flat tree: found %v, %v", found, err)
	}
}

func TestExists(t *testing.T) {
	conn := dial(t, metadatatest.KeeperAddr(t))
	fc := newFaultConn(conn)
	s := newTestStore(t, fc, Config{})
	ctx := testContext(t)
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{5, 1 << 40} {
		if ok, err := s.Exists(ctx, id); ok || err != nil {
			t.Fatalf("Exists(%d) before Create = %v, %v", id, ok, err)
		}
		if _, _, err := s.Create(ctx, id, sampleMetadata()); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Exists(ctx, id); !ok || err != nil {
			t.Fatalf("Exists(%d) = %v, %v", id, ok, err)
		}
	}
	if err := s.Delete(ctx, 5, AnyVersion); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Exists(ctx, 5); ok || err != nil {
		t.Fatalf("Exists after Delete = %v, %v", ok, err)
	}
	if _, err := s.Exists(ctx, -1); !errors.Is(err, ErrInvalidLedgerID) {
		t.Fatalf("Exists(-1): %v", err)
	}
}
