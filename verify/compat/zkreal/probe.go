package zkreal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// probeRead opens a session, reads the node /zookeeper (exists) and closes
// the session, speaking the wire protocol directly. It does not use keeper's
// own protocol packages: the oracle must not share keeper's bugs.
//
// A server that accepts connections before it has loaded its database
// closes them or refuses the session, so success means it serves reads.
func probeRead(addr string, timeout time.Duration) error {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	// ConnectRequest: protocolVersion, lastZxidSeen, timeOut (ms),
	// sessionId, passwd (16 zero bytes), readOnly.
	var req []byte
	req = binary.BigEndian.AppendUint32(req, 0)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, 10000)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, 16)
	req = append(req, make([]byte, 16)...)
	req = append(req, 0)
	resp, err := roundTrip(conn, req)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	// ConnectResponse: protocolVersion, timeOut, sessionId, passwd[, readOnly].
	if len(resp) < 16 {
		return fmt.Errorf("connect: short response (%d bytes)", len(resp))
	}
	if timeOut := int32(binary.BigEndian.Uint32(resp[4:8])); timeOut <= 0 {
		return errors.New("connect: session refused")
	}
	// exists("/zookeeper", watch=false) with xid 1, opcode 3.
	path := "/zookeeper"
	req = binary.BigEndian.AppendUint32(nil, 1)
	req = binary.BigEndian.AppendUint32(req, 3)
	req = binary.BigEndian.AppendUint32(req, uint32(len(path)))
	req = append(req, path...)
	req = append(req, 0)
	if resp, err = roundTrip(conn, req); err != nil {
		return fmt.Errorf("exists: %w", err)
	}
	// ReplyHeader: xid, zxid, err.
	if len(resp) < 16 {
		return fmt.Errorf("exists: short reply (%d bytes)", len(resp))
	}
	if xid, code := int32(binary.BigEndian.Uint32(resp[0:4])), int32(binary.BigEndian.Uint32(resp[12:16])); xid != 1 || code != 0 {
		return fmt.Errorf("exists: reply xid %d, error code %d", xid, code)
	}
	// closeSession (opcode -11), so probes do not pile up sessions.
	req = binary.BigEndian.AppendUint32(nil, 2)
	req = binary.BigEndian.AppendUint32(req, uint32(0xfffffff5))
	_, _ = roundTrip(conn, req)
	return nil
}

// probeMode asks for srvr and succeeds when the reply names the server's
// mode: a server that has not loaded its database answers that it is not
// serving.
func probeMode(addr string, timeout time.Duration) error {
	reply, err := fourLetter(addr, "srvr", timeout)
	if err != nil {
		return err
	}
	if !strings.Contains(reply, "Mode: ") {
		return fmt.Errorf("srvr: %q", reply)
	}
	return nil
}

// roundTrip writes one length-prefixed frame and reads one back.
func roundTrip(conn net.Conn, body []byte) ([]byte, error) {
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	if _, err := conn.Write(append(frame, body...)); err != nil {
		return nil, err
	}
	var n [4]byte
	if _, err := io.ReadFull(conn, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > 1<<20 {
		return nil, fmt.Errorf("frame of %d bytes", size)
	}
	resp := make([]byte, size)
	_, err := io.ReadFull(conn, resp)
	return resp, err
}
