// Package bkproto is BookKeeper's v3 bookie protocol and the formats that
// travel inside it: the protobuf messages (bookkeeper.proto, restated from
// apache/bookkeeper's BookkeeperProtocol.proto with the same names, enum
// values and field numbers), the metadata formats (dataformats.proto, from
// DataFormats.proto), the frame codec, request and response validation,
// status codes as Go errors, the master key, and the entry and LAC bodies
// with their digests. It does no I/O beyond reading frames from an
// io.Reader. The reference is docs/bookkeeper-protocol.md §6.
//
// # Frames
//
// Every message on a bookie connection is one frame: a 4-byte big-endian
// length, then that many bytes of a marshalled Request or Response.
//
//	+---------------+-----------------------------------------+
//	| length uint32 | Request or Response (protobuf, proto2)  |
//	+---------------+-----------------------------------------+
//
// The length is bounded by the frame limit (DefaultMaxFrameBytes, 5 MiB);
// a reader refuses a larger one before allocating. The header's operation
// selects the one sub-request (Request) or sub-response (Response) slot in
// use; DecodeRequest and DecodeResponse check that, and the fields each
// operation needs.
//
// # Entries
//
// AddRequest.body, ReadResponse.body and ReadLacResponse.lastEntryBody hold
// an entry's stored form. All integers are big-endian.
//
//	offset 0         8         16        24         32          32+N
//	+---------+---------+---------+----------+-----------+---------+
//	| ledgerId| entryId |   LAC   |  length  | digest(N) | payload |
//	+---------+---------+---------+----------+-----------+---------+
//
// LAC is the writer's last-add-confirmed when it sent the entry (-1 for
// none) and length the ledger's cumulative payload length including this
// entry. The digest covers bytes [0,32) followed by the payload:
//
//	DigestType  N   value
//	CRC32       8   zlib CRC-32 as a uint64 (upper 32 bits zero)
//	HMAC       20   HMAC-SHA1 keyed with MacKey(password)
//	CRC32C      4   CRC-32C (Castagnoli) as a uint32
//	DUMMY       0   none
//
// The explicit LAC body (WriteLacRequest.body, ReadLacResponse.lacBody) is
//
//	+----------+---------+-----------+
//	| ledgerId |   lac   | digest(N) |
//	+----------+---------+-----------+
//
// with the digest over the first 16 bytes. The master key a writer sends
// with every add and fence is SHA-1("ledger" || password); a bookie binds it
// to the ledger on first contact.
//
// # Regenerating the protobuf code
//
// bookkeeper.pb.go and dataformats.pb.go are generated and committed, so
// building needs neither protoc nor protoc-gen-go. After editing a .proto
// file, with protoc (3.21 or later) and protoc-gen-go v1.36.12 (the version
// of google.golang.org/protobuf in go.mod) on PATH, run
//
//	go generate ./ledgerstore/bkproto
//
// and commit the .proto and .pb.go files together. protoc-gen-go installs
// with `go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12`.
package bkproto

//go:generate protoc --go_out=. --go_opt=paths=source_relative bookkeeper.proto dataformats.proto
