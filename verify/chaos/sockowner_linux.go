package chaos

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// socketOwner returns the name of the process in owners that holds the
// other end of c, a loopback connection this process accepted. It finds
// the dialler's socket in /proc/net/tcp{,6} by its port pair and then its
// inode among each candidate's file descriptors.
func socketOwner(c net.Conn, owners map[int]string) (string, bool) {
	local, lok := c.LocalAddr().(*net.TCPAddr)
	remote, rok := c.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok {
		return "", false
	}
	inode := ""
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if inode = findSocketInode(table, remote.Port, local.Port); inode != "" {
			break
		}
	}
	if inode == "" {
		return "", false
	}
	want := "socket:[" + inode + "]"
	for pid, name := range owners {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name())); err == nil && link == want {
				return name, true
			}
		}
	}
	return "", false
}

// findSocketInode returns the inode of the socket in a /proc/net/tcp
// table whose local port is localPort and remote port remotePort.
func findSocketInode(table string, localPort, remotePort int) string {
	f, err := os.Open(table)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		if hexPort(fields[1]) == localPort && hexPort(fields[2]) == remotePort && fields[9] != "0" {
			return fields[9]
		}
	}
	return ""
}

// hexPort parses the port of a /proc/net/tcp address, "0100007F:1F90".
func hexPort(addr string) int {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return -1
	}
	p, err := strconv.ParseUint(addr[i+1:], 16, 16)
	if err != nil {
		return -1
	}
	return int(p)
}
