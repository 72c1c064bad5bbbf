package session

import (
	"crypto/subtle"
	"math"
)

// containerMarker is the ephemeralOwner value that marks container nodes
// (docs/zookeeper-protocol.md §5.4). A session with this id would make its ephemerals look like
// containers, so no session ever gets it.
const containerMarker = math.MinInt64 // 0x8000000000000000

// passwordSecret is XORed into the session id to seed the password
// generator. Java writes it 0XB3415C00L: a positive long, not sign-extended.
const passwordSecret = 0xB3415C00

// PasswordLen is the length of a session password on the wire.
const PasswordLen = 16

// InitialID returns the first session id a server hands out, as ZooKeeper
// computes it (docs/zookeeper-protocol.md §6.1):
//
//	((nowMs << 24) >>> 8) | (serverID << 56)
//
// with a logical right shift: the top byte is the server id, the next five
// bytes are the low 40 bits of the clock, and the low two bytes start at 0.
// If the result is the container marker 0x8000000000000000, the next id is
// returned instead, as ZooKeeper does.
func InitialID(serverID int64, nowMs int64) int64 {
	id := int64(uint64(nowMs<<24)>>8) | serverID<<56
	if id == containerMarker {
		id++
	}
	return id
}

// Password returns the password of session id: the first 16 bytes of
// java.util.Random(id ^ 0xB3415C00).nextBytes (docs/zookeeper-protocol.md §6.2). It is derived,
// never stored, so every server computes the same one.
func Password(id int64) [PasswordLen]byte {
	r := newJavaRandom(id ^ passwordSecret)
	var p [PasswordLen]byte
	for i := 0; i < PasswordLen; i += 4 {
		v := r.nextInt()
		for j := range 4 { // lowest byte first
			p[i+j] = byte(v >> (8 * j))
		}
	}
	return p
}

// CheckPassword reports whether passwd is the password of session id, as a
// reattaching client must present it. Id 0 never matches. The comparison
// takes the same time wherever the first difference is.
func CheckPassword(id int64, passwd []byte) bool {
	want := Password(id)
	return id != 0 && subtle.ConstantTimeCompare(passwd, want[:]) == 1
}

// Negotiate clamps a client's requested timeout into [minMs, maxMs], in
// ZooKeeper's order: raised to minMs first, then lowered to maxMs.
func Negotiate(requestedMs, minMs, maxMs int32) int32 {
	t := requestedMs
	if t < minMs {
		t = minMs
	}
	if t > maxMs {
		t = maxMs
	}
	return t
}

// javaRandom is java.util.Random's 48-bit linear congruential generator,
// enough of it to derive passwords.
type javaRandom struct{ seed uint64 }

const (
	javaMultiplier = 0x5DEECE66D
	javaAddend     = 0xB
	javaMask       = 1<<48 - 1
)

func newJavaRandom(seed int64) *javaRandom {
	return &javaRandom{seed: (uint64(seed) ^ javaMultiplier) & javaMask}
}

// nextInt is Random.next(32): advance the state and return its top 32 bits.
func (r *javaRandom) nextInt() int32 {
	r.seed = (r.seed*javaMultiplier + javaAddend) & javaMask
	return int32(r.seed >> 16)
}
