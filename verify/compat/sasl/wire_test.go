package sasl

import (
	"bufio"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"keeper/coordination/jute"
	"keeper/coordination/zkproto"
)

// ioTimeout bounds every read: a server that has not answered in this long
// is broken, and the test fails rather than waits.
const ioTimeout = 20 * time.Second

// rawConn is a connection that speaks frames directly, so a test can send
// what no client library sends.
type rawConn struct {
	nc  net.Conn
	br  *bufio.Reader
	xid int32
}

func dial(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &rawConn{nc: nc, br: bufio.NewReader(nc)}
	req := zkproto.ConnectRequest{TimeoutMs: 30000, Passwd: make([]byte, 16)}
	if err := c.write(jute.Marshal(&req)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.read(); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return c
}

func (c *rawConn) write(payload []byte) error {
	c.nc.SetWriteDeadline(time.Now().Add(ioTimeout))
	_, err := c.nc.Write(binary.BigEndian.AppendUint32(nil, uint32(len(payload))))
	if err == nil {
		_, err = c.nc.Write(payload)
	}
	return err
}

// read returns the next frame, or io.EOF once the server closed.
func (c *rawConn) read() ([]byte, error) {
	c.nc.SetReadDeadline(time.Now().Add(ioTimeout))
	var n [4]byte
	if _, err := io.ReadFull(c.br, n[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || isReset(err) {
			err = io.EOF
		}
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(n[:]))
	_, err := io.ReadFull(c.br, b)
	return b, err
}

func isReset(err error) bool { return err != nil && strings.Contains(err.Error(), "connection reset") }

// request sends op with body (raw bytes after the header) and describes
// the answer: "err=<code> zxid=<zxid> body=<hex>", or "closed" when the
// server closed the connection instead of answering.
func (c *rawConn) request(op zkproto.Op, body []byte) (string, []byte) {
	c.xid++
	hdr := binary.BigEndian.AppendUint32(nil, uint32(c.xid))
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(op))
	if err := c.write(append(hdr, body...)); err != nil {
		return "closed", nil
	}
	f, err := c.read()
	if errors.Is(err, io.EOF) {
		return "closed", nil
	}
	if err != nil || len(f) < 16 {
		return fmt.Sprintf("read error %v", err), nil
	}
	code := zkproto.Code(int32(binary.BigEndian.Uint32(f[12:16])))
	zx := int64(binary.BigEndian.Uint64(f[4:12]))
	if op != zkproto.OpSASL {
		zx = min(zx, 1) // only zero or not matters for other ops
	}
	return fmt.Sprintf("err=%v zxid=%d body=%x", code, zx, mask(f[16:])), f[16:]
}

var (
	nonceRE   = regexp.MustCompile(`nonce="([^"]*)"`)
	rspauthRE = regexp.MustCompile(`rspauth=[0-9a-f]{32}`)
)

// mask hides the nonce of a challenge and the rspauth of a final reply,
// which differ between servers by nature; the bytes around them, and the
// length prefix, stay.
func mask(body []byte) []byte {
	body = nonceRE.ReplaceAll(body, []byte(`nonce="<40 base64 characters>"`))
	return rspauthRE.ReplaceAll(body, []byte("rspauth=<32 hex digits>"))
}

// closedNow reports whether the server has closed the connection: a ping
// gets no answer.
func (c *rawConn) closedNow() bool {
	d, _ := c.request(zkproto.OpPing, nil)
	return d == "closed"
}

func saslToken(tok []byte) []byte {
	e := jute.Encoder{}
	e.Buffer(tok)
	return e.B
}

// digestResponse is a DIGEST-MD5 client's response (RFC 2831), hashed with
// the digest-uri it sends.
func digestResponse(user, password, nonce string) string {
	h := func(s string) string { sum := md5.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }
	uri := "zookeeper/zk-sasl-md5"
	secret := md5.Sum([]byte(user + ":zk-sasl-md5:" + password))
	a1 := h(string(secret[:]) + ":" + nonce + ":cn")
	resp := h(a1 + ":" + nonce + ":00000001:cn:auth:" + h("AUTHENTICATE:"+uri))
	return fmt.Sprintf(`charset=utf-8,username="%s",realm="zk-sasl-md5",nonce="%s",nc=00000001,cnonce="cn",digest-uri="%s",maxbuf=65536,response=%s,qop=auth`,
		user, nonce, uri, resp)
}

// exchange sends the first sasl token and then second(nonce) as the second
// one, and describes both answers and whether the connection is open
// after (mask hides the nonce and the rspauth).
func exchange(c *rawConn, second func(nonce string) []byte) []string {
	desc, body := c.request(zkproto.OpSASL, saslToken([]byte{}))
	out := []string{desc}
	m := nonceRE.FindSubmatch(body)
	if m == nil {
		return out
	}
	tok := second(string(m[1]))
	if tok == nil {
		desc, _ = c.request(zkproto.OpSASL, []byte{0xff, 0xff, 0xff, 0xff})
	} else {
		desc, _ = c.request(zkproto.OpSASL, saslToken(tok))
	}
	return append(out, desc)
}

// TestWireSideBySide runs the same exchanges on keeper and ZooKeeper and
// compares every answer and which connections the servers close. A
// bystander connection, authenticated first, must be served after each.
func TestWireSideBySide(t *testing.T) {
	jaas := writeJAAS(t, "jaas_password")
	servers := map[string]string{
		"zookeeper": startZooKeeper(t, jaas, nil),
		"keeper":    startKeeper(t, jaas, nil),
	}
	scenarios := []struct {
		name string
		run  func(c *rawConn) []string
	}{
		{"good", func(c *rawConn) []string {
			out := exchange(c, func(n string) []byte { return []byte(digestResponse("jaasuser", "jaas_password", n)) })
			who, _ := c.request(zkproto.OpWhoAmI, nil)
			return append(out, who)
		}},
		{"wrong password", func(c *rawConn) []string {
			return exchange(c, func(n string) []byte { return []byte(digestResponse("jaasuser", "wrong", n)) })
		}},
		{"unknown user", func(c *rawConn) []string {
			return exchange(c, func(n string) []byte { return []byte(digestResponse("nobody", "wrong", n)) })
		}},
		{"garbled", func(c *rawConn) []string {
			return exchange(c, func(string) []byte { return []byte("\x00\x01garbage") })
		}},
		{"too long", func(c *rawConn) []string {
			return exchange(c, func(string) []byte { return []byte(strings.Repeat("a", 4097)) })
		}},
		{"maxbuf not a number", func(c *rawConn) []string {
			return exchange(c, func(n string) []byte {
				return []byte(strings.Replace(digestResponse("jaasuser", "jaas_password", n), "maxbuf=65536", "maxbuf=x", 1))
			})
		}},
		{"null token", func(c *rawConn) []string { return exchange(c, func(string) []byte { return nil }) }},
		{"no body", func(c *rawConn) []string { d, _ := c.request(zkproto.OpSASL, nil); return []string{d} }},
		{"a token after success", func(c *rawConn) []string {
			out := exchange(c, func(n string) []byte { return []byte(digestResponse("jaasuser", "jaas_password", n)) })
			d, _ := c.request(zkproto.OpSASL, saslToken([]byte{}))
			return append(out, d)
		}},
		{"cut after the challenge", func(c *rawConn) []string {
			d, _ := c.request(zkproto.OpSASL, saslToken([]byte{}))
			c.nc.Close()
			return []string{d}
		}},
		{"cut inside a frame", func(c *rawConn) []string {
			c.nc.Write([]byte{0, 0, 0, 40, 0, 0, 0, 1, 0, 0, 0, 102, 0, 0})
			c.nc.Close()
			return nil
		}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			got := map[string][]string{}
			for name, addr := range servers {
				bystander := dial(t, addr)
				exchange(bystander, func(n string) []byte { return []byte(digestResponse("super", "super_secret", n)) })
				c := dial(t, addr)
				out := sc.run(c)
				if strings.HasPrefix(sc.name, "cut") {
					out = append(out, "cut")
				} else {
					out = append(out, fmt.Sprintf("closed=%v", c.closedNow()))
				}
				// Everyone else is served.
				d, _ := bystander.request(zkproto.OpExists, append(saslToken([]byte("/")), 0))
				out = append(out, "bystander "+d)
				got[name] = out
			}
			if !slices.Equal(got["keeper"], got["zookeeper"]) {
				t.Fatalf("keeper:\n  %s\nzookeeper:\n  %s", strings.Join(got["keeper"], "\n  "), strings.Join(got["zookeeper"], "\n  "))
			}
			t.Logf("both: %s", strings.Join(got["keeper"], " | "))
		})
	}
}
