package zoocfg

import (
	"errors"
	"testing"
)

func threeServers(t *testing.T) *Ensemble {
	t.Helper()
	e, err := ParseNextDynamic([]byte("server.1=127.0.0.1:2001:3001:participant;127.0.0.1:4001\n"+
		"server.2=127.0.0.1:2002:3002:participant;127.0.0.1:4002\n"+
		"server.3=127.0.0.1:2003:3003:participant;127.0.0.1:4003\nversion=100000000"), "zoo.cfg.dynamic.next")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestReconfigure(t *testing.T) {
	tests := []struct {
		name       string
		r          Reconfig
		standalone bool
		want       string // Data of the result
		err        error
	}{
		{name: "grow by two", r: Reconfig{Joining: "server.4=127.0.0.1:2004:3004;4004, server.5=127.0.0.1:2005:3005:participant;127.0.0.1:4005"},
			want: "server.1=127.0.0.1:2001:3001:participant;127.0.0.1:4001\n" +
				"server.2=127.0.0.1:2002:3002:participant;127.0.0.1:4002\n" +
				"server.3=127.0.0.1:2003:3003:participant;127.0.0.1:4003\n" +
				"server.4=127.0.0.1:2004:3004:participant;0.0.0.0:4004\n" +
				"server.5=127.0.0.1:2005:3005:participant;127.0.0.1:4005\n" +
				"version=100000005"},
		{name: "leave", r: Reconfig{Leaving: "3, 9,"},
			want: "server.1=127.0.0.1:2001:3001:participant;127.0.0.1:4001\n" +
				"server.2=127.0.0.1:2002:3002:participant;127.0.0.1:4002\n" +
				"version=100000005"},
		{name: "join replaces the same id", r: Reconfig{Joining: "server.2=127.0.0.1:2002:3002:observer;127.0.0.1:4002"},
			want: "server.1=127.0.0.1:2001:3001:participant;127.0.0.1:4001\n" +
				"server.2=127.0.0.1:2002:3002:observer;127.0.0.1:4002\n" +
				"server.3=127.0.0.1:2003:3003:participant;127.0.0.1:4003\n" +
				"version=100000005"},
		{name: "replace", r: Reconfig{Replace: true, NewMembers: "server.1=127.0.0.1:2001:3001;4001,server.7=127.0.0.1:2007:3007;4007"},
			want: "server.1=127.0.0.1:2001:3001:participant;0.0.0.0:4001\n" +
				"server.7=127.0.0.1:2007:3007:participant;0.0.0.0:4007\n" +
				"version=100000005"},
		{name: "replace with newlines", r: Reconfig{Replace: true, NewMembers: "server.2=h:1:2;3\nserver.3=h:4:5;6"},
			want: "server.2=h:1:2:participant;0.0.0.0:3\nserver.3=h:4:5:participant;0.0.0.0:6\nversion=100000005"},
		{name: "one voter left", r: Reconfig{Leaving: "1,2"}, standalone: true, err: ErrReconfigArguments},
		{name: "one voter without standalone", r: Reconfig{Leaving: "1,2"},
			want: "server.3=127.0.0.1:2003:3003:participant;127.0.0.1:4003\nversion=100000005"},
		{name: "no voter", r: Reconfig{Joining: "server.1=127.0.0.1:2001:3001:observer;127.0.0.1:4001", Leaving: "2,3"}, err: ErrReconfigArguments},
		{name: "leaving not a number", r: Reconfig{Leaving: "x"}, err: ErrReconfigMarshalling},
		{name: "joining id not a number", r: Reconfig{Joining: "server.x=h:1:2;3"}, err: ErrReconfigMarshalling},
		{name: "joining without client", r: Reconfig{Joining: "server.4=h:1:2"}, err: ErrReconfigArguments},
		{name: "joining malformed", r: Reconfig{Joining: "server.4=h:1"}, err: ErrReconfigArguments},
		{name: "joining without =", r: Reconfig{Joining: "server.4"}, err: ErrReconfigArguments},
		{name: "joining with two =", r: Reconfig{Joining: "server.4=h:1:2;3=4"}, err: ErrReconfigArguments},
		{name: "joining reuses an address", r: Reconfig{Joining: "server.4=127.0.0.1:2001:3004;4004"}, err: ErrReconfigArguments},
		{name: "joining reuses a client address", r: Reconfig{Joining: "server.4=127.0.0.1:2004:3004;127.0.0.1:4001"}, err: ErrReconfigArguments},
		{name: "joining id 0", r: Reconfig{Joining: "server.0=h:1:2;3"}, err: ErrReconfigArguments},
		{name: "replace with nothing", r: Reconfig{Replace: true}, standalone: true, err: ErrReconfigArguments},
		{name: "replace with nothing without standalone", r: Reconfig{Replace: true}, err: ErrReconfigMarshalling},
		{name: "replace with a version", r: Reconfig{Replace: true, NewMembers: "server.1=h:1:2;3,server.2=h:4:5;6,version=5"},
			want: "server.1=h:1:2:participant;0.0.0.0:3\nserver.2=h:4:5:participant;0.0.0.0:6\nversion=100000005"},
		{name: "replace with another key", r: Reconfig{Replace: true, NewMembers: "server.1=h:1:2;3,tickTime=5"}, err: ErrReconfigArguments},
		{name: "replace with a group", r: Reconfig{Replace: true, NewMembers: "server.1=h:1:2;3,group.1=1"}, err: ErrReconfigArguments},
		{name: "replace with observers only", r: Reconfig{Replace: true, NewMembers: "server.1=h:1:2:observer;3"}, err: ErrReconfigMarshalling},
		{name: "replace with one voter and an observer", r: Reconfig{Replace: true, NewMembers: "server.1=h:1:2;3,server.2=h:4:5:observer;6"},
			standalone: true, err: ErrReconfigMarshalling},
		{name: "replace with one voter", r: Reconfig{Replace: true, NewMembers: "server.1=h:1:2;3"}, standalone: true, err: ErrReconfigArguments},
		{name: "replace malformed", r: Reconfig{Replace: true, NewMembers: "server.1=h:1"}, err: ErrReconfigArguments},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next, err := threeServers(t).Reconfigure(tc.r, 0x100000005, tc.standalone)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("got %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := string(next.Data()); got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// The servers come out in the order ZooKeeper's HashMap gives them: ids
// 17 and 33 share a bin of the 16-entry table with 1, after it, in the
// order they were put (the bytes Apache ZooKeeper 3.8.0's QuorumMaj gave
// for the same change, run with its jar).
func TestReconfigureJavaOrder(t *testing.T) {
	next, err := threeServers(t).Reconfigure(Reconfig{Joining: "server.33=h:1:2;3,server.17=h:4:5;6"}, 7, true)
	if err != nil {
		t.Fatal(err)
	}
	want := "server.1=127.0.0.1:2001:3001:participant;127.0.0.1:4001\n" +
		"server.33=h:1:2:participant;0.0.0.0:3\n" +
		"server.17=h:4:5:participant;0.0.0.0:6\n" +
		"server.2=127.0.0.1:2002:3002:participant;127.0.0.1:4002\n" +
		"server.3=127.0.0.1:2003:3003:participant;127.0.0.1:4003\n" +
		"version=7"
	if got := string(next.Data()); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// FuzzReconfigure feeds arbitrary membership changes to Reconfigure: it
// must never panic, only fail with one of its errors, and what it accepts
// must read back as the same configuration.
func FuzzReconfigure(f *testing.F) {
	f.Add("server.4=127.0.0.1:2004:3004;4004", "3", "", false)
	f.Add("", "", "server.1=h:1:2;3,server.2=h:4:5;6", true)
	f.Add("server.x=h", "a,,b", "", false)
	f.Add("server.5=[::1]:1:2:observer;[::1]:3", "1,2", "", false)
	f.Fuzz(func(t *testing.T, joining, leaving, members string, replace bool) {
		e := &Ensemble{Servers: []Server{
			{ID: 1, Host: "127.0.0.1", QuorumPort: 2001, ElectionPort: 3001, ClientHost: "0.0.0.0", ClientPort: 4001},
			{ID: 2, Host: "127.0.0.1", QuorumPort: 2002, ElectionPort: 3002, ClientHost: "0.0.0.0", ClientPort: 4002},
		}}
		next, err := e.Reconfigure(Reconfig{Joining: joining, Leaving: leaving, NewMembers: members, Replace: replace}, 0x100000003, true)
		if err != nil {
			if !errors.Is(err, ErrReconfigArguments) && !errors.Is(err, ErrReconfigMarshalling) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		back, err := ParseNextDynamic(next.Data(), "zoo.cfg.dynamic.next")
		if err != nil {
			t.Fatalf("%q does not read back: %v", next.Data(), err)
		}
		if string(back.Data()) != string(next.Data()) {
			t.Fatalf("read back as\n%s\nnot\n%s", back.Data(), next.Data())
		}
	})
}
