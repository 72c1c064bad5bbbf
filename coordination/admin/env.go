package admin

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"keeper/coordination/zkcore"
)

// environment lists envi's key=value pairs in ZooKeeper's order. The
// zookeeper.version line is what kazoo's server_version() parses: the text
// up to the first '-', split on '.'.
//
// The Java-only keys (java.version, java.vendor, java.home,
// java.class.path, java.library.path, java.io.tmpdir, java.compiler) are
// left out; go.version stands in for them. os.memory.* describe the Go
// heap: total is the memory obtained from the OS, free the part of it not
// holding live heap objects, and max the soft memory limit (GOMEMLIMIT),
// which is left out when unset.
func (a *Admin) environment() []field {
	host, _ := os.Hostname()
	cwd, _ := os.Getwd()
	name, home := os.Getenv("USER"), os.Getenv("HOME")
	if u, err := user.Current(); err == nil {
		name, home = u.Username, u.HomeDir
	}
	env := []field{
		{"zookeeper.version", a.cfg.Version},
		{"host.name", host},
		{"go.version", runtime.Version()},
		{"os.name", osName()},
		{"os.arch", runtime.GOARCH},
		{"os.version", osVersion()},
		{"user.name", name},
		{"user.home", home},
		{"user.dir", cwd},
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	const mb = 1 << 20
	env = append(env, field{"os.memory.free", fmt.Sprintf("%dMB", (ms.Sys-ms.HeapAlloc)/mb)})
	if limit := debug.SetMemoryLimit(-1); limit < 1<<62 {
		env = append(env, field{"os.memory.max", fmt.Sprintf("%dMB", limit/mb)})
	}
	return append(env, field{"os.memory.total", fmt.Sprintf("%dMB", ms.Sys/mb)})
}

// envi renders "Environment:" and then a key=value line per entry.
func (a *Admin) envi() []byte {
	var b bytes.Buffer
	b.WriteString("Environment:\n")
	for _, f := range a.environment() {
		fmt.Fprintf(&b, "%s=%s\n", f.key, f.value)
	}
	return b.Bytes()
}

// osName returns the operating system's name as Java's os.name spells it.
func osName() string {
	switch runtime.GOOS {
	case "linux":
		return "Linux"
	case "darwin":
		return "Mac OS X"
	case "windows":
		return "Windows"
	case "freebsd":
		return "FreeBSD"
	}
	return runtime.GOOS
}

// osVersion returns the kernel release where the platform exposes it.
func osVersion() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// dirSize returns the total size of the regular files under dir, at any
// depth, as ZooKeeper's getDataDirSize does. Unreadable entries and a
// missing or empty dir count as 0.
func dirSize(dir string) int64 {
	if dir == "" {
		return 0
	}
	var total int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			total += info.Size()
		}
		return nil
	})
	return total
}

// dirs renders "datadir_size: N" and "logdir_size: N".
func (a *Admin) dirs() []byte {
	return fmt.Appendf(nil, "datadir_size: %d\nlogdir_size: %d\n", dirSize(a.cfg.SnapDir), dirSize(a.cfg.LogDir))
}

// confLines returns Config.ConfLines with the live directory sizes.
func (a *Admin) confLines() []string {
	out := make([]string, len(a.cfg.ConfLines))
	for i, line := range a.cfg.ConfLines {
		key, _, _ := strings.Cut(line, "=")
		switch key {
		case "dataDirSize":
			line = key + "=" + strconv.FormatInt(dirSize(a.cfg.SnapDir), 10)
		case "dataLogSize":
			line = key + "=" + strconv.FormatInt(dirSize(a.cfg.LogDir), 10)
		}
		out[i] = line
	}
	return out
}

// conf renders the key=value lines, and an ensemble member's quorum
// lines and membership (Config.QuorumConf).
func (a *Admin) conf() []byte {
	var b bytes.Buffer
	for _, line := range a.confLines() {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	if a.cfg.QuorumConf != nil {
		a.core.Inspect(func(*zkcore.Server) { b.WriteString(a.cfg.QuorumConf()) })
	}
	return b.Bytes()
}

// configurationKeys are the configuration command's fields in ZooKeeper's
// order (ZooKeeperServerConf.toMap), each with the conf key it reads. An
// ensemble member's conf lines say more (initLimit, peerType, ...), which
// the command leaves out, as ZooKeeper does.
var configurationKeys = []struct{ json, conf string }{
	{"client_port", "clientPort"}, {"data_dir", "dataDir"}, {"data_log_dir", "dataLogDir"},
	{"tick_time", "tickTime"}, {"max_client_cnxns", "maxClientCnxns"},
	{"min_session_timeout", "minSessionTimeout"}, {"max_session_timeout", "maxSessionTimeout"},
	{"server_id", "serverId"}, {"client_port_listen_backlog", "clientPortListenBacklog"},
}

// configurationFields returns the configuration command's JSON fields
// from conf's lines, integers as numbers; a key conf lacks is left out.
func (a *Admin) configurationFields() []field {
	conf := map[string]string{}
	for _, line := range a.cfg.ConfLines {
		if key, value, ok := strings.Cut(line, "="); ok {
			conf[key] = value
		}
	}
	var out []field
	for _, k := range configurationKeys {
		value, ok := conf[k.conf]
		switch n, err := strconv.ParseInt(value, 10, 64); {
		case !ok:
		case err == nil:
			out = append(out, field{k.json, n})
		default:
			out = append(out, field{k.json, value})
		}
	}
	return out
}
