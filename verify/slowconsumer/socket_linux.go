package slowconsumer

import (
	"net"
	"syscall"
	"unsafe"
)

// Every attacker's socket sends Ethernet-sized segments and has a small
// receive buffer. On loopback, 64 KiB segments make the kernel buffer
// several hundred KiB for every connection that does not read (the
// sender's buffer is sized in segments), which thousands of them would
// take from the machine's TCP memory, and which no client across a real
// network gets; the small receive buffer keeps the replies the attack
// asks for in the server rather than in the kernel.
const (
	ethernetMSS       = 1460
	receiveBufferSize = 16 << 10
)

// dialControl sets the attackers' socket options before they connect.
func dialControl(_, _ string, rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, ethernetMSS)
		if serr == nil {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, receiveBufferSize)
		}
	})
	if err != nil {
		return err
	}
	return serr
}

// tcpEstablished is Linux's TCP_ESTABLISHED, the first byte of struct
// tcp_info (tcpi_state).
const tcpEstablished = 1

// peerClosed reports whether the server has closed or reset nc: its
// socket has left ESTABLISHED (CLOSE_WAIT after the server's FIN, CLOSE
// after a reset). It reads the state without reading the connection, so
// the replies it holds stay unread.
func peerClosed(nc net.Conn) bool {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return false
	}
	var info [8]byte // the kernel copies no more than asked
	var errno syscall.Errno
	err = rc.Control(func(fd uintptr) {
		n := uint32(len(info))
		_, _, errno = syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
			uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&n)), 0)
	})
	return err == nil && errno == 0 && info[0] != tcpEstablished
}
