package metadata

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
)

// FuzzDecode feeds arbitrary bytes to the metadata decoder. Whatever it
// accepts must encode, and decode again to the same metadata.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(upstreamV1))
	f.Add([]byte(upstreamV2))
	f.Add([]byte(upstreamV2Ctime))
	f.Add(unhex(f, upstreamV3))
	for _, md := range []ledger.Metadata{sampleMetadata(), sampleWithCustom()} {
		data, err := Encode(md)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(headerKey + "1\n2\n2\n10\n0\ta:1\tb:1\n5\tb:1\tc:1\n9\tCLOSED\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		md, err := Decode(data)
		if err != nil {
			return // rejecting garbage is correct; panicking or over-allocating is not
		}
		enc, err := Encode(md)
		if err != nil {
			t.Fatalf("Encode of decoded %+v: %v", md, err)
		}
		again, err := Decode(enc)
		if err != nil || !again.Equal(md) || again.FormatVersion != FormatVersion3 {
			t.Fatalf("round trip turned %+v into %+v (err: %v)", md, again, err)
		}
	})
}

// FuzzServiceAddress feeds arbitrary registration data to the endpoint
// decoder.
func FuzzServiceAddress(f *testing.F) {
	info, err := proto.Marshal(&bkproto.BookieServiceInfoFormat{Endpoints: []*bkproto.BookieServiceInfoFormat_Endpoint{
		{Id: proto.String("bookie"), Port: proto.Int32(3181), Host: proto.String("10.0.0.5"), Protocol: proto.String("bookie-rpc")},
	}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(info)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		addr, err := ServiceAddress("b1:3181", data)
		if err == nil && addr == "" {
			t.Fatalf("ServiceAddress(%x) returned no address and no error", data)
		}
	})
}
