package httpadmin

import (
	"encoding/base64"
	"sort"
	"strconv"
	"unicode/utf8"

	"keeper/ledgerstore/bkproto"
	"keeper/ledgerstore/ledger"
)

// metadataObject is a ledger's metadata in the layout BookKeeper's JSON
// helper gives its LedgerMetadata bean (docs/bookie-http.md): one field
// per getter, bookie ids as {"id": ...}, byte arrays in base64.
func metadataObject(id int64, md ledger.Metadata) obj {
	ensembles := make(obj, 0, len(md.Segments))
	for _, s := range md.Segments {
		bookies := make([]any, 0, len(s.Bookies))
		for _, b := range s.Bookies {
			bookies = append(bookies, obj{{"id", string(b)}})
		}
		ensembles = append(ensembles, field{strconv.FormatInt(s.FirstEntryID, 10), bookies})
	}
	keys := make([]string, 0, len(md.Custom))
	for k := range md.Custom {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	custom := make(obj, 0, len(keys))
	for _, k := range keys {
		custom = append(custom, field{k, base64.StdEncoding.EncodeToString(md.Custom[k])})
	}
	password := md.Password
	if password == nil {
		password = []byte{}
	}
	return obj{
		{"ledgerId", id},
		{"allEnsembles", ensembles},
		{"ensembleSize", md.EnsembleSize},
		{"writeQuorumSize", md.WriteQuorum},
		{"ackQuorumSize", md.AckQuorum},
		{"ctime", md.CTimeMillis},
		{"password", base64.StdEncoding.EncodeToString(password)},
		{"digestType", digestName(md.DigestType)},
		{"lastEntryId", md.LastEntryID},
		{"length", md.Length},
		{"closed", md.State == ledger.StateClosed},
		{"state", stateName(md.State)},
		{"customMetadata", custom},
		{"metadataFormatVersion", formatVersion(md)},
		{"ctoken", md.CToken},
	}
}

// digestName is the name of the client API's digest type: HMAC is "MAC"
// there, and metadata naming none is read as CRC32.
func digestName(d bkproto.DigestType) string {
	switch d {
	case bkproto.DigestHMAC:
		return "MAC"
	case bkproto.DigestCRC32C:
		return "CRC32C"
	case bkproto.DigestDummy:
		return "DUMMY"
	default:
		return "CRC32"
	}
}

func stateName(s ledger.State) string {
	switch s {
	case ledger.StateInRecovery:
		return "IN_RECOVERY"
	case ledger.StateClosed:
		return "CLOSED"
	default:
		return "OPEN"
	}
}

func formatVersion(md ledger.Metadata) int {
	if md.FormatVersion == 0 {
		return 3
	}
	return md.FormatVersion
}

// javaString decodes b as Java's new String(b, UTF_8) does for valid
// input, with each invalid byte replaced by U+FFFD. It is how BookKeeper
// prints the serialized metadata in a ledger listing.
func javaString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]rune, 0, len(b))
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		out = append(out, r) // RuneError for an invalid byte
		b = b[n:]
	}
	return string(out)
}
