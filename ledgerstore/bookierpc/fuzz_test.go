package bookierpc

import (
	"bytes"
	"testing"

	"keeper/ledgerstore/bkproto"
)

// FuzzReadOneFrame: the client's reader of the answer to START_TLS never
// panics, refuses a frame above its bound before allocating it, and reads
// nothing past the frame (the handshake's bytes follow it).
func FuzzReadOneFrame(f *testing.F) {
	ok, err := bkproto.AppendFrame(nil, &bkproto.Response{Header: bkproto.NewHeader(bkproto.OperationType_START_TLS, 1),
		Status: bkproto.StatusCode_EOK.Enum(), StartTLSResponse: &bkproto.StartTLSResponse{}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(append(ok, 0x16, 0x03, 0x01))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 2, 0x08})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		resp, err := readOneFrame(r)
		if err != nil {
			return
		}
		if resp == nil {
			t.Fatal("nil response without an error")
		}
		n := bkproto.FrameLengthBytes + int(uint32(data[0])<<24|uint32(data[1])<<16|uint32(data[2])<<8|uint32(data[3]))
		if read := len(data) - r.Len(); read != n {
			t.Fatalf("read %d bytes of a %d-byte frame", read, n)
		}
	})
}
