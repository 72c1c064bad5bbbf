package bookie

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"keeper/ledgerstore/bookietls"
)

// maxConfigBytes bounds a configuration file; BookKeeper's bk_server.conf
// with every comment is about 60 KB.
const maxConfigBytes = 4 << 20

// ParseProperties parses a Java properties file, the format of
// BookKeeper's bookkeeper.conf: `key=value`, `key: value` or `key value`
// lines; `#` and `!` comment lines; a backslash at the end of a line
// continues it; \t, \n, \r, \f, \\ and \uXXXX escapes. A repeated key
// keeps its last value.
func ParseProperties(data []byte) (map[string]string, error) {
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("configuration of %d bytes is too large", len(data))
	}
	if !utf8.Valid(data) {
		return nil, errors.New("configuration is not valid UTF-8")
	}
	props := make(map[string]string)
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		for endsWithContinuation(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimLeft(lines[i], " \t\f")
		}
		key, value := splitProperty(line)
		k, err := unescapeProperty(key)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", i+1, err)
		}
		v, err := unescapeProperty(value)
		if err != nil {
			return nil, fmt.Errorf("line %d: key %s: %v", i+1, k, err)
		}
		props[k] = v
	}
	return props, nil
}

// endsWithContinuation reports whether line ends in an odd number of
// backslashes.
func endsWithContinuation(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits a logical line at the first unescaped '=', ':' or
// whitespace. After whitespace, one '=' or ':' may still follow; the
// separator and the whitespace around it are not part of the value.
func splitProperty(line string) (key, value string) {
	const ws = " \t\f"
	i := 0
	for i < len(line) && !strings.ContainsRune("=:"+ws, rune(line[i])) {
		if line[i] == '\\' {
			i++
		}
		i++
	}
	if i >= len(line) {
		return line, ""
	}
	key, rest := line[:i], line[i:]
	if rest[0] != '=' && rest[0] != ':' {
		rest = strings.TrimLeft(rest, ws)
		if rest == "" || (rest[0] != '=' && rest[0] != ':') {
			return key, rest
		}
	}
	return key, strings.TrimLeft(rest[1:], ws)
}

// unescapeProperty resolves a properties file's escapes.
func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("malformed \\u escape in %q", s)
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\u escape in %q", s)
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// confParser turns properties into Config fields, recording the first
// invalid value under its key.
type confParser struct {
	props map[string]string
	used  map[string]bool
	asked map[string]bool // every key looked for, present or not: the keys keeper uses
	err   error
}

func (p *confParser) get(key string) (string, bool) {
	p.asked[key] = true
	v, ok := p.props[key]
	if ok {
		p.used[key] = true
		v = strings.TrimSpace(v)
	}
	return v, ok && p.err == nil
}

func (p *confParser) fail(key, value, want string) {
	if p.err == nil {
		p.err = &KeyError{Key: key, Reason: fmt.Sprintf("%q is not %s", value, want)}
	}
}

// KeyError is a bookkeeper.conf key whose value keeper refuses: not a
// valid value, or a setting that protects data or access which keeper
// does not implement. The caller, which has the file, names its line.
type KeyError struct {
	Key    string
	Reason string
}

func (e *KeyError) Error() string { return fmt.Sprintf("bookkeeper.conf: %s: %s", e.Key, e.Reason) }

func (p *confParser) int64(key string, min, max int64, dst *int64) bool {
	v, ok := p.get(key)
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < min || n > max {
		p.fail(key, v, fmt.Sprintf("an integer in [%d, %d]", min, max))
		return false
	}
	*dst = n
	return true
}

func (p *confParser) int(key string, min, max int, dst *int) bool {
	var n int64
	if !p.int64(key, int64(min), int64(max), &n) {
		return false
	}
	*dst = int(n)
	return true
}

func (p *confParser) fraction(key string, zeroOK bool, dst *float64) bool {
	v, ok := p.get(key)
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 1 || (f == 0 && !zeroOK) {
		if zeroOK {
			p.fail(key, v, "a fraction in [0, 1]")
		} else {
			p.fail(key, v, "a fraction in (0, 1]")
		}
		return false
	}
	*dst = f
	return true
}

// duration reads a non-negative integer count of unit.
func (p *confParser) duration(key string, unit time.Duration, dst *time.Duration) bool {
	var n int64
	if !p.int64(key, 0, math.MaxInt64/int64(unit), &n) {
		return false
	}
	*dst = time.Duration(n) * unit
	return true
}

func (p *confParser) bool(key string, dst *bool) bool {
	v, ok := p.get(key)
	if !ok {
		return false
	}
	switch strings.ToLower(v) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		p.fail(key, v, "true or false")
		return false
	}
	return true
}

func (p *confParser) list(key string) ([]string, bool) {
	v, ok := p.get(key)
	if !ok {
		return nil, false
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		p.fail(key, v, "a comma-separated list of directories")
		return nil, false
	}
	return out, true
}

// ConfigFromProperties builds a Config from the keys of a BookKeeper
// server configuration that keeper applies (see the package doc for the
// list). BookKeeper's "0 disables" settings (compaction thresholds and
// intervals, journalMaxBackups, journalMaxGroupWaitMSec) are carried over
// with their meaning. An invalid value is an error naming its key, and so
// is a key that asks for a protection of data or access keeper does not
// give yet (TLS, authentication, zkEnableSecurity=true; see
// conffile_protect.go). Keys keeper does not use are returned, sorted, so
// the caller can say they were ignored, unless one is a misspelling of a
// key keeper uses: that is a *TypoError.
func ConfigFromProperties(props map[string]string) (Config, []string, error) {
	p := &confParser{props: props, used: make(map[string]bool), asked: make(map[string]bool)}
	var c Config
	p.identity(&c)
	p.storage(&c)
	p.journal(&c)
	p.disks(&c)
	p.compaction(&c)
	p.limits(&c)
	p.metadata(&c)
	p.httpServer(&c)
	p.tls(&c)
	p.refuseProtective()
	if p.err != nil {
		return Config{}, nil, p.err
	}
	var ignored []string
	for k := range props {
		if !p.used[k] {
			ignored = append(ignored, k)
		}
	}
	sort.Strings(ignored)
	if err := p.typos(ignored); err != nil {
		return Config{}, nil, err
	}
	if c.HTTPServerAddr != "" { // the admin API prints them
		c.Properties = make(map[string]string, len(props))
		for k, v := range props {
			c.Properties[k] = v
		}
	}
	return c, ignored, nil
}

// tls reads the TLS keys twice: as the bookie's (ServerConfiguration) and
// as its own clients' (ClientConfiguration built from it).
func (p *confParser) tls(c *Config) {
	var err error
	if c.TLS, err = bookietls.Parse(bookietls.Bookie, p.get); err == nil {
		c.ClientTLS, err = bookietls.Parse(bookietls.Client, p.get)
	}
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("bookkeeper.conf: %w", err)
	}
}

// httpServer reads httpServerEnabled, httpServerPort (8080) and
// httpServerHost (0.0.0.0), BookKeeper's keys and defaults for the HTTP
// admin API. The port and host are read, and checked, even when the API
// is off.
func (p *confParser) httpServer(c *Config) {
	var enabled bool
	p.bool("httpServerEnabled", &enabled)
	port := int64(8080)
	p.int64("httpServerPort", 0, 65535, &port)
	host := "0.0.0.0"
	if v, ok := p.get("httpServerHost"); ok && v != "" {
		host = v
	}
	if enabled {
		c.HTTPServerAddr = net.JoinHostPort(host, strconv.FormatInt(port, 10))
	}
}

func (p *confParser) identity(c *Config) {
	port := int64(DefaultPort)
	p.int64("bookiePort", 0, 65535, &port)
	c.ListenAddr = net.JoinHostPort("", strconv.FormatInt(port, 10))
	if v, ok := p.get("bookieId"); ok {
		c.BookieID = v
	}
	if v, ok := p.get("advertisedAddress"); ok {
		c.AdvertisedAddress = v
	}
	p.int("nettyMaxFrameSizeBytes", 1024, maxFrameLimit, &c.MaxFrameBytes)
	var promPort int64
	if p.int64("prometheusStatsHttpPort", 0, 65535, &promPort) {
		host, _ := p.get("prometheusStatsHttpAddress")
		c.MetricsAddr = net.JoinHostPort(host, strconv.FormatInt(promPort, 10))
	}
}

func (p *confParser) storage(c *Config) {
	if dirs, ok := p.list("journalDirectories"); ok {
		c.JournalDirs = dirs
	} else if dirs, ok := p.list("journalDirectory"); ok {
		c.JournalDirs = dirs
	}
	if dirs, ok := p.list("ledgerDirectories"); ok {
		c.LedgerDirs = dirs
	}
	if dirs, ok := p.list("indexDirectories"); ok {
		if len(dirs) != 1 {
			p.fail("indexDirectories", strings.Join(dirs, ","), "one directory (keeper keeps one index)")
		} else {
			c.IndexDir = dirs[0]
		}
	}
	var mb int64
	if p.int64("dbStorage_writeCacheMaxSizeMb", 1, 1<<20, &mb) {
		c.WriteCacheBytes = mb << 20
	}
	if p.int64("dbStorage_readAheadCacheMaxSizeMb", 0, 1<<20, &mb) {
		c.ReadCacheBytes = mb << 20
		if mb == 0 {
			c.ReadCacheBytes = -1 // no read cache
		}
	}
	p.int64("logSizeLimit", 4<<10, 1<<30, &c.EntryLogMaxBytes)
	p.duration("flushInterval", time.Millisecond, &c.FlushInterval)
	if c.FlushInterval == 0 && p.used["flushInterval"] {
		p.fail("flushInterval", p.props["flushInterval"], "a positive number of milliseconds")
	}
}

func (p *confParser) journal(c *Config) {
	var sync bool
	if p.bool("journalSyncData", &sync) {
		c.JournalSyncDisabled = !sync
	}
	if p.duration("journalMaxGroupWaitMSec", time.Millisecond, &c.JournalMaxGroupWait) && c.JournalMaxGroupWait == 0 {
		c.JournalMaxGroupWait = -1 // BookKeeper's 0: close every batch at once
	}
	p.int64("journalBufferedWritesThreshold", 1, math.MaxInt64, &c.JournalBufferedWritesThresholdBytes)
	p.int("journalBufferedEntriesThreshold", 0, math.MaxInt32, &c.JournalBufferedEntriesThreshold)
	var flushWhenEmpty bool
	if p.bool("journalFlushWhenQueueEmpty", &flushWhenEmpty) {
		c.JournalWaitWhenQueueEmpty = !flushWhenEmpty
	}
	// journalAdaptiveGroupWrites=true makes BookKeeper's force-write thread
	// sync every batch flushed during a sync with one fsync. keeper's
	// journal goroutine syncs each batch as it closes and appends nothing
	// while it syncs, so the records that arrive then make one batch and
	// one fsync whatever the key says: both values are accepted and behave
	// alike (docs/bookkeeper-protocol.md §7.3).
	var adaptive bool
	p.bool("journalAdaptiveGroupWrites", &adaptive)
	if v, ok := p.get("journalFormatVersionToWrite"); ok {
		switch v {
		case "6":
			c.JournalFormatVersion = 6
		case "7":
			c.JournalFormatVersion = 7
		default:
			p.fail("journalFormatVersionToWrite", v, "6 (BookKeeper's format) or 7 (keeper's, checksummed)")
		}
	}
	var mb int64
	if p.int64("journalMaxSizeMB", 1, 1<<20, &mb) {
		c.JournalMaxSizeBytes = mb << 20
	}
	if p.int64("journalPreAllocSizeMB", 1, 1<<10, &mb) {
		c.JournalPreAllocSizeBytes = mb << 20
	}
	p.int("journalAlignmentSize", 512, 64<<10, &c.JournalAlignmentBytes)
	if p.int("journalMaxBackups", 0, 1<<20, &c.JournalMaxBackups) && c.JournalMaxBackups == 0 {
		c.JournalMaxBackups = -1 // keep none
	}
	p.duration("journalPageCacheFlushIntervalMSec", time.Millisecond, &c.JournalPageCacheFlushInterval)
}

func (p *confParser) disks(c *Config) {
	p.fraction("diskUsageThreshold", false, &c.DiskUsageThreshold)
	p.fraction("diskUsageWarnThreshold", false, &c.DiskUsageWarnThreshold)
	p.fraction("diskUsageLwmThreshold", false, &c.DiskUsageLwmThreshold)
	if p.duration("diskCheckInterval", time.Millisecond, &c.DiskCheckInterval) && c.DiskCheckInterval == 0 {
		p.fail("diskCheckInterval", p.props["diskCheckInterval"], "a positive number of milliseconds")
	}
	var ro bool
	if p.bool("readOnlyModeEnabled", &ro) {
		c.ReadOnlyModeDisabled = !ro
	}
}

func (p *confParser) compaction(c *Config) {
	if p.duration("gcWaitTime", time.Millisecond, &c.GCWaitTime) && c.GCWaitTime == 0 {
		p.fail("gcWaitTime", p.props["gcWaitTime"], "a positive number of milliseconds")
	}
	disable := func(v *float64) {
		if *v == 0 {
			*v = -1
		}
	}
	disableD := func(v *time.Duration) {
		if *v == 0 {
			*v = -1
		}
	}
	if p.fraction("minorCompactionThreshold", true, &c.MinorCompactionThreshold) {
		disable(&c.MinorCompactionThreshold)
	}
	if p.fraction("majorCompactionThreshold", true, &c.MajorCompactionThreshold) {
		disable(&c.MajorCompactionThreshold)
	}
	if p.duration("minorCompactionInterval", time.Second, &c.MinorCompactionInterval) {
		disableD(&c.MinorCompactionInterval)
	}
	if p.duration("majorCompactionInterval", time.Second, &c.MajorCompactionInterval) {
		disableD(&c.MajorCompactionInterval)
	}
}

// limits reads the connection limits. BookKeeper's per-thread request
// queues become keeper's per-connection counts, with BookKeeper's zero or
// negative meaning no count bound; the byte limits are keeper's own keys.
// waitTimeoutOnResponseBackpressureMs must be positive: keeper neither
// waits forever for a client that stops reading (BookKeeper's -1) nor
// drops responses (its 0 and closeChannelOnResponseTimeout=false); it
// closes the connection.
func (p *confParser) limits(c *Config) {
	count := func(key string, dst *int) {
		var n int64
		if p.int64(key, math.MinInt32, math.MaxInt32, &n) {
			*dst = int(n)
			if n <= 0 {
				*dst = -1
			}
		}
	}
	count("maxPendingAddRequestsPerThread", &c.MaxPendingAddsPerConn)
	count("maxPendingReadRequestsPerThread", &c.MaxPendingReadsPerConn)
	p.int64("maxPendingRequestBytesPerConnection", 1, 1<<40, &c.MaxPendingRequestBytesPerConn)
	p.int64("maxUnsentResponseBytesPerConnection", 1, 1<<40, &c.MaxUnsentBytesPerConn)
	p.int64("maxPendingConnectionBytes", 1, 1<<50, &c.MaxPendingBytes)
	const key = "waitTimeoutOnResponseBackpressureMs"
	var ms int64
	if p.int64(key, math.MinInt64, math.MaxInt64/int64(time.Millisecond), &ms) {
		if ms <= 0 {
			p.fail(key, p.props[key], "a positive number of milliseconds (keeper closes a client that stops reading)")
		}
		c.StuckClientTimeout = time.Duration(ms) * time.Millisecond
	}
}

// metadata reads metadataServiceUri (zk+hierarchical://h1:2181;h2:2181/ledgers),
// or zkServers and zkLedgersRootPath, and zkTimeout.
func (p *confParser) metadata(c *Config) {
	if v, ok := p.get("metadataServiceUri"); ok {
		servers, root, err := parseMetadataURI(v)
		if err != nil {
			p.fail("metadataServiceUri", v, "a zk:// or zk+hierarchical:// URI ("+err.Error()+")")
		} else {
			c.MetadataServers, c.LedgersRoot = servers, root
		}
	}
	if v, ok := p.get("zkServers"); ok && len(c.MetadataServers) == 0 {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				c.MetadataServers = append(c.MetadataServers, s)
			}
		}
		if len(c.MetadataServers) == 0 {
			p.fail("zkServers", v, "a comma-separated list of host:port")
		}
	}
	if v, ok := p.get("zkLedgersRootPath"); ok && c.LedgersRoot == "" {
		c.LedgersRoot = v
	}
	p.duration("zkTimeout", time.Millisecond, &c.ZKSessionTimeout)
}

// parseMetadataURI splits a BookKeeper metadata service URI into its
// servers (separated by ';' or ',') and ledgers root. Only ZooKeeper
// schemes ("zk", "zk+hierarchical", "zk+longhierarchical", "zk+null")
// are accepted: keeper writes hierarchical paths whatever the flavour.
func parseMetadataURI(s string) ([]string, string, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return nil, "", errors.New("no scheme")
	}
	if scheme != "zk" && !strings.HasPrefix(scheme, "zk+") {
		return nil, "", fmt.Errorf("scheme %q is not a ZooKeeper one", scheme)
	}
	hosts, path, _ := strings.Cut(rest, "/")
	servers := strings.FieldsFunc(hosts, func(r rune) bool { return r == ';' || r == ',' })
	if len(servers) == 0 {
		return nil, "", errors.New("no servers")
	}
	root := "/" + strings.TrimSuffix(path, "/")
	if root == "/" {
		root = DefaultLedgersRoot
	}
	if _, err := url.PathUnescape(root); err != nil {
		return nil, "", err
	}
	return servers, root, nil
}
