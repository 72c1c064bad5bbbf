package zab

import (
	"bytes"
	"errors"
	"testing"

	"keeper/coordination/zxid"
)

// A serving learner's REVALIDATE goes to its leader; the leader's answer
// goes back to that learner; both are liveness for the receiver and carry
// opaque data. Neither side sends one outside broadcast.
func TestRevalidate(t *testing.T) {
	c := newCluster(t, three, []PeerID{4}, nil)
	c.until(500, "stable", func() bool { _, ok := c.stable(); return ok })
	l, _ := c.stable()
	for _, learner := range []PeerID{1, 4} {
		ask := []byte("question")
		if err := c.nodes[learner].Revalidate(ask); err != nil {
			t.Fatalf("learner %d: %v", learner, err)
		}
		c.handle(learner)
		m := c.queue[len(c.queue)-1]
		if m.Type != MsgRevalidate || m.From != learner || m.To != l || m.Zxid != zxid.None || !bytes.Equal(m.Data, ask) {
			t.Fatalf("learner %d sent %s", learner, m)
		}
		if err := c.nodes[l].Step(m); err != nil {
			t.Fatalf("leader: %v", err)
		}
		if err := c.nodes[l].AnswerRevalidate(learner, []byte("verdict")); err != nil {
			t.Fatal(err)
		}
		c.handle(l)
		a := c.queue[len(c.queue)-1]
		if a.Type != MsgRevalidate || a.From != l || a.To != learner {
			t.Fatalf("leader sent %s", a)
		}
		if err := c.nodes[learner].Step(a); err != nil {
			t.Fatalf("learner %d: %v", learner, err)
		}
		c.queue = nil
	}
	if err := c.nodes[l].Revalidate(nil); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("the leader revalidates: %v", err)
	}
	if err := c.nodes[1].AnswerRevalidate(2, nil); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a follower answers: %v", err)
	}
	if err := c.nodes[l].AnswerRevalidate(9, nil); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("an answer to an unknown learner: %v", err)
	}
	c.crash(l)
	c.until(500, "followers looking", func() bool { return !c.nodes[1].Serving() })
	if err := c.nodes[1].Revalidate(nil); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a learner without a leader revalidates: %v", err)
	}
}
