package zoocfg

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// NextDynamicSuffix names the file ZooKeeper keeps a configuration in that
// it has seen proposed but not yet committed: the static file's path with
// this suffix (zoo.cfg.dynamic.next).
const NextDynamicSuffix = ".dynamic.next"

// Ensemble is one configuration of the ensemble: its servers and the
// version ZooKeeper numbers configurations with (the zxid of the reconfig
// that made it, or of the NEWLEADER that first stamped it; 0 for a
// configuration no ensemble has stamped yet).
type Ensemble struct {
	// Servers sorted by ID.
	Servers []Server
	// Version is the configuration's version; ZooKeeper writes it in hex.
	Version int64
	// Order is the order ZooKeeper lists the servers in /zookeeper/config
	// (see javaorder.go); nil means the order of Servers.
	Order []int64
}

// ParseDynamic reads a dynamic configuration file, as ZooKeeper 3.8 reads
// the file dynamicConfigFile names: only server.N lines (group.N and
// weight.N are hierarchical quorums, which keeper refuses), no version
// line, and the version taken from the end of the file's name (see
// VersionFromFilename; 0 when the name has none).
func ParseDynamic(data []byte, name string) (*Ensemble, error) {
	props, err := readDynamic(data, name)
	if err != nil {
		return nil, err
	}
	for _, p := range props {
		switch {
		case p.key == "version":
			return nil, fmt.Errorf("%s:%d: version: a dynamic configuration file must not hold a version (it is in the file's name)", name, p.line)
		case strings.HasPrefix(p.key, "group") || strings.HasPrefix(p.key, "weight"):
			return nil, fmt.Errorf("%s:%d: %s: hierarchical quorums are not supported", name, p.line, p.key)
		case !strings.HasPrefix(p.key, "server."):
			return nil, fmt.Errorf("%s:%d: %s: not allowed in a dynamic configuration file (only server.N)", name, p.line, p.key)
		}
	}
	e, err := ensembleFrom(props, name)
	if err != nil {
		return nil, err
	}
	if v, ok := VersionFromFilename(name); ok {
		e.Version = v
		// ZooKeeper adds the version to the properties after reading them.
		e.Order = serverOrder(append(keysOf(props), "version"))
	}
	return e, nil
}

// ParseNextDynamic reads zoo.cfg.dynamic.next, which ZooKeeper writes with
// its version line and reads as a whole configuration, ignoring other keys.
func ParseNextDynamic(data []byte, name string) (*Ensemble, error) {
	props, err := readDynamic(data, name)
	if err != nil {
		return nil, err
	}
	for _, p := range props {
		if strings.HasPrefix(p.key, "group") || strings.HasPrefix(p.key, "weight") {
			return nil, fmt.Errorf("%s:%d: %s: hierarchical quorums are not supported", name, p.line, p.key)
		}
	}
	return ensembleFrom(props, name)
}

func readDynamic(data []byte, name string) ([]property, error) {
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, MaxFileBytes)
	}
	props, err := parseProperties(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return props, nil
}

// ensembleFrom builds the ensemble of the server.N and version keys of
// props; the last of a repeated key counts, as in java.util.Properties.
func ensembleFrom(props []property, name string) (*Ensemble, error) {
	e := &Ensemble{}
	last := map[string]property{}
	for _, p := range props {
		last[p.key] = p
	}
	for _, k := range uniqueKeys(props) {
		p := last[k]
		if n, ok := cutServerKey(k); ok {
			id, err := parseServerID(n)
			if err == nil {
				var s Server
				if s, err = parseServer(id, p.value); err == nil {
					e.Servers = append(e.Servers, s)
					continue
				}
			}
			return nil, fmt.Errorf("%s:%d: %s: invalid value %q: %w", name, p.line, k, p.value, err)
		}
		if k == "version" {
			v, err := parseVersion(p.value)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: version: invalid value %q: %w", name, p.line, p.value, err)
			}
			e.Version = v
		}
	}
	slices.SortFunc(e.Servers, func(a, b Server) int { return cmp.Compare(a.ID, b.ID) })
	e.Order = serverOrder(keysOf(props))
	return e, nil
}

func keysOf(props []property) []string {
	keys := make([]string, len(props))
	for i, p := range props {
		keys[i] = p.key
	}
	return keys
}

// uniqueKeys returns the keys of props in the order they first appear.
func uniqueKeys(props []property) []string {
	var keys []string
	seen := map[string]bool{}
	for _, p := range props {
		if !seen[p.key] {
			seen[p.key] = true
			keys = append(keys, p.key)
		}
	}
	return keys
}

// parseVersion reads a configuration version as Java's
// Long.parseLong(v, 16): hex digits with an optional sign, 64 bits.
func parseVersion(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 16, 64)
	if err != nil {
		return 0, errors.New("not a hexadecimal 64-bit integer")
	}
	return n, nil
}

// FormatVersion writes a configuration version as ZooKeeper does
// (Long.toHexString: lowercase hex, two's complement for negatives).
func FormatVersion(v int64) string { return strconv.FormatUint(uint64(v), 16) }

// VersionFromFilename is the version at the end of a dynamic file's name,
// after its last '.', in hex: zoo.cfg.dynamic.100000000 has version
// 0x100000000. A name whose tail is not a hex number has none.
func VersionFromFilename(name string) (int64, bool) {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return 0, false
	}
	v, err := parseVersion(name[i+1:])
	return v, err == nil
}

// DynamicFilename is the name ZooKeeper gives the dynamic file of a
// configuration version: the static file's path, ".dynamic.", the version
// in hex.
func DynamicFilename(staticPath string, version int64) string {
	return staticPath + ".dynamic." + FormatVersion(version)
}

// Ensemble returns the configuration the server starts with.
func (c *Config) Ensemble() *Ensemble {
	return &Ensemble{Servers: c.Servers, Version: c.ConfigVersion, Order: c.ServerOrder}
}

// useDynamic makes e the configuration.
func (c *Config) useDynamic(e *Ensemble) {
	c.Servers, c.ConfigVersion, c.ServerOrder = e.Servers, e.Version, e.Order
}

// ReadFile reads a file by name; Load gets it from its caller, so that this
// package stays free of the file system. A missing file is an error that
// wraps fs.ErrNotExist.
type ReadFile func(name string) ([]byte, error)

// Load reads the static configuration file at path and, as ZooKeeper 3.8
// does, the files it leads to:
//
//   - With dynamicConfigFile, the servers come from that file alone (a
//     server.N, group or weight line left in the static file is an error)
//     and the version from its name; zoo.cfg.dynamic.next beside the static
//     file, when there is one, is the configuration last seen proposed
//     (NextEnsemble), which only a server with reconfiguration enabled acts
//     on.
//   - Without it, the static file's server.N lines and its version line
//     (0 when absent) are the configuration; a zoo.cfg.dynamic.* or .bak
//     file beside it is not read.
//
// The files ZooKeeper writes as the configuration changes (docs/configuration.md)
// make the next start read the newest committed configuration: the static
// file is rewritten to point at it, and its .bak is never read back.
func Load(path string, read ReadFile) (*Config, []Warning, error) {
	raw, err := read(path)
	if err != nil {
		return nil, nil, err
	}
	c, warnings, err := Parse(strings.NewReader(string(raw)))
	if err != nil || c.DynamicConfigFile == "" {
		return c, warnings, err
	}
	dyn, err := read(c.DynamicConfigFile)
	if err != nil {
		return nil, nil, fmt.Errorf("dynamicConfigFile: %w", err)
	}
	e, err := ParseDynamic(dyn, c.DynamicConfigFile)
	if err != nil {
		return nil, nil, err
	}
	c.useDynamic(e)
	next := path + NextDynamicSuffix
	switch data, err := read(next); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		// ZooKeeper logs an unreadable next file and goes on without it.
		warnings = append(warnings, Warning{Key: "dynamicConfigFile", Message: fmt.Sprintf("%s not read: %v", next, err)})
	default:
		if c.NextEnsemble, err = ParseNextDynamic(data, next); err != nil {
			return nil, nil, err
		}
	}
	return c, warnings, nil
}

// ConfigData is the content of /zookeeper/config for a server run with c,
// as ZooKeeper 3.8 stores it: nothing for a standalone server; for a quorum
// (Distributed), a "server.N=..." line per server, in ZooKeeper's order, and
// "version=<hex>" without a final newline.
func (c *Config) ConfigData() []byte {
	if !c.Distributed() {
		return []byte{}
	}
	return c.Ensemble().Data()
}

// Data is e as ZooKeeper writes a configuration into /zookeeper/config and
// its reconfig replies: a "server.N=" line per server with the server in
// canonical form (Server.String, with IP literals as Java prints them:
// javaHostString), then "version=<hex>".
func (e *Ensemble) Data() []byte {
	var b strings.Builder
	for _, s := range e.ordered() {
		s.Host, s.ClientHost = javaHostString(s.Host), javaHostString(s.ClientHost)
		fmt.Fprintf(&b, "server.%d=%s\n", s.ID, s)
	}
	b.WriteString("version=" + FormatVersion(e.Version))
	return []byte(b.String())
}

// ordered returns the servers in Order, then any Order leaves out by id.
func (e *Ensemble) ordered() []Server {
	byID := map[int64]Server{}
	for _, s := range e.Servers {
		byID[s.ID] = s
	}
	out := make([]Server, 0, len(e.Servers))
	for _, id := range e.Order {
		if s, ok := byID[id]; ok {
			out = append(out, s)
			delete(byID, id)
		}
	}
	for _, s := range e.Servers {
		if _, ok := byID[s.ID]; ok {
			out = append(out, s)
		}
	}
	return out
}

// javaHostString is a host as Java's InetSocketAddress.getHostString gives
// it back for a server line: a name as written, an IP literal as
// InetAddress.getHostAddress prints it. For IPv6 that is eight groups of
// lowercase hex without compression ("::1" is "0:0:0:0:0:0:0:1"), and an
// IPv4-mapped address is the IPv4 one.
func javaHostString(host string) string {
	a, err := netip.ParseAddr(host)
	if err != nil || !a.Is6() {
		return host
	}
	if a.Is4In6() {
		return a.Unmap().String()
	}
	b := a.As16()
	groups := make([]string, 8)
	for i := range groups {
		groups[i] = strconv.FormatUint(uint64(b[2*i])<<8|uint64(b[2*i+1]), 16)
	}
	out := strings.Join(groups, ":")
	if z := a.Zone(); z != "" {
		out += "%" + z
	}
	return out
}
