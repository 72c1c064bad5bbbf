package slowconsumer

import (
	"time"

	"keeper/ledgerstore/bkproto"
)

// bkResponseOverheadBytes is what a READ_ENTRY response adds to the stored
// entry: the frame's length prefix, the header, the status and the ids.
const bkResponseOverheadBytes = 64

// Bookie is the bookie's v3 protocol: reads are READ_ENTRY of entry
// entryID of ledger ledgerID, whose stored form (bkproto.EncodeEntry) is
// entryBytes long, and pings are GET_BOOKIE_INFO (a bookie has no
// sessions; the pings serve only to tell which connections it closed).
func Bookie(ledgerID, entryID int64, entryBytes int) Protocol {
	return Protocol{
		Name: "bookie",
		Read: func(i int) []byte {
			l, e := ledgerID, entryID
			return bkFrame(&bkproto.Request{Header: bkproto.NewHeader(bkproto.OperationType_READ_ENTRY, uint64(i)+1),
				ReadRequest: &bkproto.ReadRequest{LedgerId: &l, EntryId: &e}})
		},
		Ping: func(i int) []byte {
			flags := int64(bkproto.GetBookieInfoRequest_FREE_DISK_SPACE)
			return bkFrame(&bkproto.Request{Header: bkproto.NewHeader(bkproto.OperationType_GET_BOOKIE_INFO, 1<<32+uint64(i)),
				GetBookieInfoRequest: &bkproto.GetBookieInfoRequest{Requested: &flags}})
		},
		ReplyBytes: entryBytes + bkResponseOverheadBytes,
	}
}

// bkFrame frames a request whose required fields are all set.
func bkFrame(req *bkproto.Request) []byte {
	b, err := bkproto.AppendFrame(nil, req)
	if err != nil {
		panic(err) // every request above sets its required fields
	}
	return b
}

// BookiePlan is the round the chaos scenario "slow consumers on bookies"
// runs against a bookie whose waitTimeoutOnResponseBackpressureMs is
// stuckTimeout, reading a stored entry of entryBytes (about 1 MB): one
// connection pipelines 40 READ_ENTRY (40 MB of responses) and reads
// nothing, one reads a byte a second, one stops half-way through its first
// response, and 200 connections each pipeline three and read nothing. The
// bookie builds a connection's responses only while its budget allows, so
// some connections become stuck only once others are closed: the hold is
// two stuckTimeouts and 2 s, so that most have been closed when the round
// looks.
//
// The bookie holds for this round at most its 256 MiB budget plus, for
// every connection, a request frame, its reserve and one response
// (ledgerstore/bookie/limits.go): 203 × about 1 MB.
func BookiePlan(ledgerID, entryID int64, entryBytes int, stuckTimeout time.Duration) Plan {
	p := Bookie(ledgerID, entryID, entryBytes)
	return Plan{
		Attacks: map[Kind]Attack{
			Pipeline:    {Proto: p, Conns: 1, Reads: 40},
			ByteASecond: {Proto: p, Conns: 1, Reads: 40},
			MidReply:    {Proto: p, Conns: 1, Reads: 40},
			ManyConns:   {Proto: p, Conns: 200, Reads: 3},
		},
		Hold: 2*stuckTimeout + 2*time.Second,
	}
}
