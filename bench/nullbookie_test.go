package bench

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/bookierpc"
)

// nullEntry is an add's body: the stored form of payload as entry id of
// ledger.
func nullEntry(ledger, id int64, payload []byte) []byte {
	return bkproto.EncodeEntry(ledger, id, id-1, int64(len(payload)), bkproto.DigestCRC32C, nil, payload)
}

func startNullBookie(t *testing.T) (*NullBookie, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "null")
	b, err := StartNullBookie(ln, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, path
}

// dialNullBookie connects to b; the context bounds the test's calls.
func dialNullBookie(t *testing.T, b *NullBookie) (*bookierpc.Client, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c, err := bookierpc.Dial(ctx, b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, ctx
}

// TestNullBookieAnswers: adds are answered EOK once their bodies are in
// the file; every other request, well formed or not, gets a status.
func TestNullBookieAnswers(t *testing.T) {
	b, path := startNullBookie(t)
	c, ctx := dialNullBookie(t, b)
	key := make([]byte, bkproto.MasterKeyBytes)
	first, second := nullEntry(7, 0, []byte("first")), nullEntry(7, 1, []byte("second"))
	for _, tc := range []struct {
		name string
		req  *bkproto.Request
		want bkproto.StatusCode
	}{
		{"add", bookierpc.AddRequest(7, 0, key, first, false), bkproto.StatusCode_EOK},
		{"recovery add", bookierpc.AddRequest(7, 1, key, second, true), bkproto.StatusCode_EOK},
		{"read", &bkproto.Request{ReadRequest: &bkproto.ReadRequest{LedgerId: proto.Int64(7), EntryId: proto.Int64(0)}},
			bkproto.StatusCode_EBADREQ},
		{"add of a negative entry", bookierpc.AddRequest(7, -2, key, nullEntry(7, -2, nil), false), bkproto.StatusCode_EBADREQ},
		{"add with a short key", bookierpc.AddRequest(7, 2, []byte("k"), nullEntry(7, 2, nil), false), bkproto.StatusCode_EBADREQ},
	} {
		resp, err := c.Call(ctx, tc.req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := bkproto.ResponseStatus(resp); got != tc.want {
			t.Errorf("%s: status %v, want %v", tc.name, got, tc.want)
		}
		if tc.want == bkproto.StatusCode_EOK && resp.GetAddResponse().GetEntryId() != tc.req.GetAddRequest().GetEntryId() {
			t.Errorf("%s: response %v names another entry", tc.name, resp)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil || string(data) != string(first)+string(second) {
		t.Fatalf("file holds %q (%v), want the two added bodies", data, err)
	}
}

// TestNullBookiePipelinedAdds: adds sent together are all answered, each
// with its own entry, and all their bodies are written.
func TestNullBookiePipelinedAdds(t *testing.T) {
	b, path := startNullBookie(t)
	c, ctx := dialNullBookie(t, b)
	const adds = 200
	chans := make([]<-chan bookierpc.Result, adds)
	size := int64(0)
	for i := range chans {
		body := nullEntry(1, int64(i), make([]byte, 100))
		size += int64(len(body))
		chans[i] = c.Go(bookierpc.AddRequest(1, int64(i), make([]byte, bkproto.MasterKeyBytes), body, false))
	}
	for i, ch := range chans {
		select {
		case r := <-ch:
			if err := bookierpc.StatusErr(r.Resp, r.Err); err != nil || r.Resp.GetAddResponse().GetEntryId() != int64(i) {
				t.Fatalf("add %d: %v %v", i, r.Resp, err)
			}
		case <-ctx.Done():
			t.Fatalf("add %d unanswered", i)
		}
	}
	if st, err := os.Stat(path); err != nil || st.Size() != size {
		t.Fatalf("file %v (%v), want %d bytes", st, err, size)
	}
}

// TestNullBookieClosesOnGarbage: a frame that is not a v3 request ends the
// connection, and the bookie goes on serving others.
func TestNullBookieClosesOnGarbage(t *testing.T) {
	b, _ := startNullBookie(t)
	nc, err := net.Dial("tcp", b.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	frame := binary.BigEndian.AppendUint32(nil, 3)
	if _, err := nc.Write(append(frame, 0xff, 0xff, 0xff)); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := nc.Read(make([]byte, 64)); err != io.EOF {
		t.Fatalf("read %d bytes, %v: want the connection closed", n, err)
	}
	c, ctx := dialNullBookie(t, b)
	if err := c.Add(ctx, 1, 0, make([]byte, bkproto.MasterKeyBytes), nullEntry(1, 0, []byte("still here")), false); err != nil {
		t.Fatal(err)
	}
}

// TestNullBookieRefusesExistingFile: a null bookie never appends to a file
// it did not create.
func TestNullBookieRefusesExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "taken")
	if err := os.WriteFile(path, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if b, err := StartNullBookie(ln, path); err == nil {
		_ = b.Close()
		t.Fatal("started on a file that exists")
	}
}
