package session

import "testing"

// Renew clears Closing marks and gives everyone a full timeout again.
func TestRenew(t *testing.T) {
	tab, err := NewTable(Config{TickMs: 100, ServerID: 1})
	if err != nil {
		t.Fatal(err)
	}
	a := tab.Create(1000, 0)
	b := tab.Create(5000, 0)
	if got := tab.Expire(1200); len(got) != 1 || got[0] != a {
		t.Fatalf("expired %v", got)
	}
	tab.Renew(2000)
	if s, _ := tab.Get(a); s.Closing || s.ExpiresAtMs <= 3000 {
		t.Fatalf("renewed session %+v", s)
	}
	if got := tab.Expire(2999); len(got) != 0 {
		t.Fatalf("expired after renew: %v", got)
	}
	if got := tab.Expire(3100); len(got) != 1 || got[0] != a {
		t.Fatalf("renewed session did not expire again: %v", got)
	}
	if s, _ := tab.Get(b); s.ExpiresAtMs != 7100 {
		t.Fatalf("b expires at %d, want 7100", s.ExpiresAtMs)
	}
}
