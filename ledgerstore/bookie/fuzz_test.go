package bookie

import (
	"bufio"
	"context"
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	pvfs "github.com/cockroachdb/pebble/v2/vfs"
	"google.golang.org/protobuf/proto"

	"keeper/internal/vfs"
	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
)

// FuzzParseCookie feeds arbitrary bytes to the cookie parser (cookies
// come from disks and the metadata store). What it accepts must survive
// an encode and parse again unchanged.
func FuzzParseCookie(f *testing.F) {
	f.Add([]byte("5\nbookieHost: \"h:1\"\njournalDir: \"/j\"\nledgerDirs: \"1\\t/l\"\ninstanceId: \"x\"\n"))
	f.Add([]byte("3\nh:1\n/j\n1\t/l\n"))
	f.Add([]byte("4\nbookieHost: \"h\\303\\251\"\njournalDir: \"\"\nledgerDirs: \"\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCookie(data)
		if err != nil || c.LayoutVersion < 4 {
			return
		}
		again, err := ParseCookie(c.Encode())
		if err != nil || again != c {
			t.Fatalf("round trip turned %+v into %+v (%v); encoded:\n%s", c, again, err, c.Encode())
		}
	})
}

// FuzzConfigFile feeds arbitrary text to the bookkeeper.conf reader: it
// may refuse it, never panic.
func FuzzConfigFile(f *testing.F) {
	f.Add([]byte("bookiePort=3181\njournalDirectories=/j\nledgerDirectories=/l\nzkServers=z:2181\n"))
	f.Add([]byte("metadataServiceUri=zk+hierarchical://a:1;b:2/x/ledgers\nkey\\\n  continued : v\\u0041\n"))
	f.Add([]byte("diskUsageThreshold=0.5\ndiskUsageWarnThreshold=0.9\nminorCompactionInterval=0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		props, err := ParseProperties(data)
		if err != nil {
			return
		}
		c, _, err := ConfigFromProperties(props)
		if err != nil {
			return
		}
		_ = c.Validate()
	})
}

var (
	fuzzOnce   sync.Once
	fuzzBookie *Bookie
	fuzzClient *bookierpc.Client
	fuzzErr    error
)

// FuzzRequestFrames sends arbitrary bytes, framed, to a live bookie on a
// fresh connection, and then checks that the bookie still serves another
// connection: malformed input may close its own connection, nothing more.
func FuzzRequestFrames(f *testing.F) {
	seed := func(req *bkproto.Request) []byte {
		b, _ := proto.MarshalOptions{AllowPartial: true}.Marshal(req)
		return b
	}
	f.Add(seed(&bkproto.Request{Header: bkproto.NewHeader(bkproto.OperationType_ADD_ENTRY, 1),
		AddRequest: bookierpc.AddRequest(1, 0, testKey, body(1, 0, 10), false).AddRequest}))
	f.Add(seed(&bkproto.Request{Header: bkproto.NewHeader(bkproto.OperationType_READ_ENTRY, 2),
		ReadRequest: &bkproto.ReadRequest{LedgerId: proto.Int64(1), EntryId: proto.Int64(-1),
			PreviousLAC: proto.Int64(-1), TimeOut: proto.Int64(1)}}))
	f.Add(seed(&bkproto.Request{Header: bkproto.NewHeader(bkproto.OperationType_READ_ENTRY, 3),
		ReadRequest: &bkproto.ReadRequest{LedgerId: proto.Int64(1), EntryId: proto.Int64(0),
			Flag: bkproto.ReadRequest_FENCE_LEDGER.Enum(), MasterKey: testKey}}))
	f.Add(seed(&bkproto.Request{Header: bkproto.NewHeader(bkproto.OperationType_WRITE_LAC, 4),
		WriteLacRequest: &bkproto.WriteLacRequest{LedgerId: proto.Int64(2), Lac: proto.Int64(0), MasterKey: testKey,
			Body: bkproto.EncodeLAC(2, 0, bkproto.DigestCRC32C, nil)}}))
	f.Add([]byte("\x0a\x06\x08\x03\x10\x08\x18\x05\xaa\x06\x00"))
	// v2 packets (docs/bookkeeper-protocol.md §6.2): an add, a fencing read, an auth.
	f.Add(v2Add(hdrAdd, testKey, body(1, 1, 10)))
	f.Add(v2Read(hdrFence, 1, -1, testKey))
	f.Add(join(u32(hdrAuth), []byte("\x0a\x01x\x12\x00")))
	f.Add(join(u32(0x02070000), i64(1), i64(0), i64(7), u32(3), i64(1<<20)))
	f.Fuzz(func(t *testing.T, frame []byte) {
		fuzzOnce.Do(func() {
			// One bookie for the whole fuzzing process, in memory; it is
			// never closed.
			e := &env{fs: vfs.NewMem(), pfs: pvfs.NewCrashableMem(), id: "fuzz.test:3181"}
			e.usage.Store(100_000)
			if fuzzBookie, fuzzErr = e.tryStart(); fuzzErr == nil {
				fuzzClient, fuzzErr = bookierpc.Dial(context.Background(), fuzzBookie.Addr().String())
			}
		})
		if fuzzErr != nil {
			t.Fatal(fuzzErr)
		}
		nc, err := net.Dial("tcp", fuzzBookie.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(time.Second))
		msg := binary.BigEndian.AppendUint32(nil, uint32(len(frame)))
		if _, err := nc.Write(append(msg, frame...)); err != nil {
			return
		}
		// One answer, or the connection closed (or, for a long poll,
		// nothing within the deadline).
		_, _ = bkproto.ReadFrame(bufio.NewReader(nc), nil, 0)
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, _, err := fuzzClient.BookieInfo(cctx); err != nil {
			t.Fatalf("bookie does not answer after frame %x: %v", frame, err)
		}
	})
}
