package zkproto

import (
	"bytes"
	"reflect"
	"testing"

	"keeper/coordination/jute"
)

// TestConnectRequestBytes checks the handshake request against docs/zookeeper-protocol.md §1.2,
// with and without the optional readOnly byte.
func TestConnectRequestBytes(t *testing.T) {
	zeros16 := "00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
	tests := []struct {
		name  string
		frame string // with the length prefix
		want  ConnectRequest
	}{
		{
			name: "documented example, new session, readOnly byte",
			frame: "00 00 00 2d  00 00 00 00  00 00 00 00 00 00 00 00  00 00 75 30" +
				"  00 00 00 00 00 00 00 00  00 00 00 10 " + zeros16 + "  00",
			want: ConnectRequest{TimeoutMs: 30000, Passwd: make([]byte, 16), HasReadOnly: true},
		},
		{
			name: "old client without readOnly byte",
			frame: "00 00 00 2c  00 00 00 00  00 00 00 00 00 00 00 05  00 00 27 10" +
				"  01 00 00 0c 4c 56 00 00  00 00 00 10 " + zeros16,
			want: ConnectRequest{LastZxidSeen: 5, TimeoutMs: 10000, SessionID: 0x0100000c4c560000,
				Passwd: make([]byte, 16)},
		},
		{
			name: "readOnly true",
			frame: "00 00 00 2d  00 00 00 00  00 00 00 01 00 00 00 02  00 00 0f a0" +
				"  00 00 00 00 00 00 00 00  00 00 00 10 " + zeros16 + "  01",
			want: ConnectRequest{LastZxidSeen: 0x100000002, TimeoutMs: 4000, Passwd: make([]byte, 16),
				ReadOnly: true, HasReadOnly: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame := hx(t, tt.frame)
			payload, err := ReadFrame(bytes.NewReader(frame), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			if want := ConnectRequestLen - 1; !tt.want.HasReadOnly && len(payload) != want {
				t.Fatalf("payload is %d bytes, want %d", len(payload), want)
			}
			got, err := DecodeConnectRequest(payload, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("decoded %+v, want %+v", got, tt.want)
			}
			if enc := AppendFrame(nil, jute.Marshal(&tt.want)); !bytes.Equal(enc, frame) {
				t.Fatalf("encoded\n% x\nwant\n% x", enc, frame)
			}
		})
	}
}

// TestConnectResponseBytes checks the handshake response against the
// verified 3.8.0 example of docs/zookeeper-protocol.md §1.3: 37 bytes with readOnly, 36 without.
func TestConnectResponseBytes(t *testing.T) {
	const prefix = "00 00 00 00  00 00 27 10  01 00 00 0c 4c 56 00 00" +
		"  00 00 00 10  28 04 47 7c 95 e6 6d 09 46 d7 51 30 66 d5 6b d8"
	passwd := hx(t, "28 04 47 7c 95 e6 6d 09 46 d7 51 30 66 d5 6b d8")
	tests := []struct {
		name  string
		frame string
		want  ConnectResponse
	}{
		{
			name:  "documented example with readOnly byte",
			frame: "00 00 00 25  " + prefix + "  00",
			want: ConnectResponse{TimeoutMs: 10000, SessionID: 0x0100000c4c560000, Passwd: passwd,
				HasReadOnly: true},
		},
		{
			name:  "old client: no readOnly byte",
			frame: "00 00 00 24  " + prefix,
			want:  ConnectResponse{TimeoutMs: 10000, SessionID: 0x0100000c4c560000, Passwd: passwd},
		},
		{
			name: "invalid session",
			frame: "00 00 00 25  00 00 00 00  00 00 00 00  00 00 00 00 00 00 00 00" +
				"  00 00 00 10  00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00  00",
			want: ConnectResponse{Passwd: make([]byte, PasswdLen), HasReadOnly: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame := hx(t, tt.frame)
			enc := jute.Marshal(&tt.want)
			wantLen := ConnectResponseLen
			if !tt.want.HasReadOnly {
				wantLen--
			}
			if len(enc) != wantLen {
				t.Fatalf("encoded %d bytes, want %d", len(enc), wantLen)
			}
			if got := AppendFrame(nil, enc); !bytes.Equal(got, frame) {
				t.Fatalf("encoded\n% x\nwant\n% x", got, frame)
			}
			got, err := DecodeConnectResponse(frame[4:], 0)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("decoded %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestConnectDecodeErrors checks truncation and bounds, and that bytes after
// the readOnly byte are ignored as the Java server ignores them.
func TestConnectDecodeErrors(t *testing.T) {
	full := jute.Marshal(&ConnectRequest{Passwd: make([]byte, 16), HasReadOnly: true})
	for n := range len(full) - 1 {
		if n == 44 {
			continue // 44 bytes is a valid old-client request
		}
		if _, err := DecodeConnectRequest(full[:n], 0); err == nil {
			t.Errorf("%d-byte prefix decoded without error", n)
		}
	}
	if _, err := DecodeConnectRequest(full, 8); err == nil {
		t.Error("16-byte password accepted with maxLen 8")
	}
	got, err := DecodeConnectRequest(append(full[:len(full):len(full)], 7, 7), 0)
	if err != nil || !got.HasReadOnly || got.ReadOnly {
		t.Errorf("trailing bytes: got %+v, %v", got, err)
	}
	if err := jute.Unmarshal(append(full[:len(full):len(full)], 7), &ConnectRequest{}, 0); err == nil {
		t.Error("jute.Unmarshal accepted trailing bytes")
	}
}
