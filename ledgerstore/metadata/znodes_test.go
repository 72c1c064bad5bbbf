package metadata

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPlainZnodes(t *testing.T) {
	s, _ := keeperStore(t, Config{})
	ctx := testContext(t)
	base := s.Root() + "/underreplication"

	// Parents are created; a second create is ErrNodeExists.
	p := base + "/ledgers/0000/0000/0000/0001/urL0000000001"
	if _, err := s.CreateNode(ctx, p, []byte("a"), NodePersistent); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateNode(ctx, p, nil, NodePersistent); !errors.Is(err, ErrNodeExists) {
		t.Fatalf("second create: %v, want ErrNodeExists", err)
	}
	data, v, err := s.GetNode(ctx, p)
	if err != nil || string(data) != "a" || v != 0 {
		t.Fatalf("GetNode = %q, %d, %v", data, v, err)
	}
	if _, err := s.SetNode(ctx, p, []byte("b"), 5); !errors.Is(err, ErrBadVersion) {
		t.Fatalf("SetNode at a stale version: %v, want ErrBadVersion", err)
	}
	if v, err = s.SetNode(ctx, p, []byte("b"), v); err != nil || v != 1 {
		t.Fatalf("SetNode = %d, %v", v, err)
	}
	if err := s.DeleteNode(ctx, base+"/ledgers/0000", AnyVersion); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("delete of a parent: %v, want ErrNotEmpty", err)
	}
	names, err := s.NodeChildren(ctx, base+"/ledgers/0000/0000/0000/0001")
	if err != nil || len(names) != 1 || names[0] != "urL0000000001" {
		t.Fatalf("NodeChildren = %v, %v", names, err)
	}

	// Sequential names carry the suffix.
	seq, err := s.CreateNode(ctx, base+"/auditorelection/V_", nil, NodeEphemeralSequential)
	if err != nil || !strings.HasPrefix(seq, base+"/auditorelection/V_") || len(seq) != len(base+"/auditorelection/V_")+10 {
		t.Fatalf("sequential create = %q, %v", seq, err)
	}

	// A watch fires on deletion.
	ok, fired, err := s.NodeExistsWatch(ctx, p)
	if err != nil || !ok {
		t.Fatalf("NodeExistsWatch = %v, %v", ok, err)
	}
	if err := s.DeleteNode(ctx, p, 0); !errors.Is(err, ErrBadVersion) {
		t.Fatalf("delete at a stale version: %v", err)
	}
	if err := s.DeleteNode(ctx, p, AnyVersion); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fired:
	case <-time.After(waitTimeout):
		t.Fatal("the watch did not fire on deletion")
	}
	if _, _, err := s.GetNode(ctx, p); !errors.Is(err, ErrNoNode) {
		t.Fatalf("GetNode after delete: %v, want ErrNoNode", err)
	}
}

func TestPlainZnodesStayUnderRoot(t *testing.T) {
	s, _ := keeperStore(t, Config{})
	ctx := testContext(t)
	for _, p := range []string{"/zookeeper", "/ledgersX/a", s.Root(), s.Root() + "/", s.Root() + "//a", "relative"} {
		if _, err := s.CreateNode(ctx, p, nil, NodePersistent); !errors.Is(err, ErrOutsideRoot) {
			t.Errorf("CreateNode(%q) = %v, want ErrOutsideRoot", p, err)
		}
		if _, _, err := s.GetNode(ctx, p); !errors.Is(err, ErrOutsideRoot) {
			t.Errorf("GetNode(%q) = %v, want ErrOutsideRoot", p, err)
		}
	}
}
