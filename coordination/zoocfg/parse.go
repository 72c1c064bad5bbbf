package zoocfg

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxFileBytes bounds the zoo.cfg Parse reads. Real files are a few KiB;
// the bound stops a misdirected path (a device, a log) from being slurped.
const MaxFileBytes = 1 << 20

// Error reports a zoo.cfg value that cannot be used.
type Error struct {
	Line  int    // 1-based line of the key
	Key   string // the key as written
	Value string // the value as written, after escapes and trimming
	Err   error  // why the value is invalid
}

// Error formats e as zoo.cfg:LINE: KEY: invalid value "VALUE": REASON.
func (e *Error) Error() string {
	return fmt.Sprintf("zoo.cfg:%d: %s: invalid value %q: %v", e.Line, e.Key, e.Value, e.Err)
}

// Unwrap returns the reason.
func (e *Error) Unwrap() error { return e.Err }

// Warning is something in zoo.cfg that Parse accepted but the operator
// should hear about: an unknown or unsupported key, a duplicate key, a value
// raised to its minimum. Parse returns warnings; the caller logs them.
type Warning struct {
	Line    int    // 1-based line, or 0 when the warning is about the whole file
	Key     string // the key concerned, if any
	Message string // what happened, lowercase, without the key
}

// String formats w like an Error.
func (w Warning) String() string {
	return fmt.Sprintf("zoo.cfg:%d: %s: %s", w.Line, w.Key, w.Message)
}

// unsetTimeout marks a session timeout zoo.cfg did not set. ZooKeeper uses
// -1 for this, and an explicit -1 in the file means the same.
const unsetTimeout = -time.Millisecond

// parser carries the state of one Parse call.
type parser struct {
	c        *Config
	warnings []Warning
	line     int    // line of the property being applied
	key      string // key of the property being applied
	servers  map[string]bool
	dynamic  bool // the file sets dynamicConfigFile
}

func (p *parser) warn(msg string) {
	p.warnings = append(p.warnings, Warning{Line: p.line, Key: p.key, Message: msg})
}

// Parse reads a zoo.cfg. It applies ZooKeeper 3.8's defaults for keys the
// file leaves out, and returns warnings for keys it does not use. An
// invalid value is an *Error naming the key and the value; a file
// java.util.Properties cannot read, or one without dataDir, is an error too.
//
// Parse checks each value on its own; call Validate for the rules that span
// fields, after setting MyID.
func Parse(r io.Reader) (*Config, []Warning, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("zoo.cfg: read: %w", err)
	}
	if len(data) > MaxFileBytes {
		return nil, nil, fmt.Errorf("zoo.cfg: larger than %d bytes", MaxFileBytes)
	}
	props, err := parseProperties(data)
	if err != nil {
		return nil, nil, err
	}
	p := &parser{c: defaults(), servers: map[string]bool{}}
	p.c.MinSessionTimeout, p.c.MaxSessionTimeout = unsetTimeout, unsetTimeout
	last := map[string]int{} // key -> line of its last occurrence: the one that counts
	for _, prop := range props {
		last[prop.key] = prop.line
	}
	_, p.dynamic = last["dynamicConfigFile"]
	for _, prop := range props {
		p.line, p.key = prop.line, prop.key
		if l := last[prop.key]; l != prop.line {
			p.warn(fmt.Sprintf("duplicate key; the value on line %d wins", l))
			continue
		}
		if err := p.apply(prop.key, prop.value); err != nil {
			if _, ok := errors.AsType[*UnsupportedError](err); ok {
				return nil, nil, err
			}
			return nil, nil, &Error{Line: prop.line, Key: prop.key, Value: prop.value, Err: err}
		}
	}
	if err := p.finish(); err != nil {
		return nil, nil, err
	}
	if len(p.c.Servers) > 0 {
		p.c.ServerOrder = serverOrder(keysOf(props))
	}
	return p.c, p.warnings, nil
}

// apply sets the field for one key.
func (p *parser) apply(key, value string) error {
	if set, ok := settings[key]; ok {
		return set(p, value)
	}
	if set, ok := tlsSetting(key); ok {
		return set(p, value)
	}
	if isX509Provider(key, value) {
		p.c.TLS.X509Provider = true
		return nil
	}
	if set, ok := saslSetting(key); ok {
		return set(p, value)
	}
	if isSASLProvider(key, value) {
		p.c.SASL.Provider = true
		return nil
	}
	if set, ok := quorumSASLSetting(key); ok {
		return set(p, value)
	}
	if prot, ok := protectionOf(key); ok {
		return prot.check("zoo.cfg", p.line, key, value)
	}
	switch {
	case p.dynamic && (strings.HasPrefix(key, "server.") || strings.HasPrefix(key, "group") || strings.HasPrefix(key, "weight")):
		return errors.New("must be in the dynamic configuration file, since dynamicConfigFile is set")
	case strings.HasPrefix(key, "server."):
		return p.addServer(strings.TrimPrefix(key, "server."), value)
	case strings.HasPrefix(key, "group") || strings.HasPrefix(key, "weight"):
		return errors.New("hierarchical quorums are not supported")
	case ignoredKeys[key] || hasIgnoredPrefix(key):
		p.warn("zookeeper setting not supported by keeper; ignored")
	default:
		p.warn("unknown key; ignored")
	}
	return nil
}

func (p *parser) addServer(n, value string) error {
	id, err := parseServerID(n)
	if err != nil {
		return err
	}
	s, err := parseServer(id, value)
	if err != nil {
		return err
	}
	p.c.Servers = append(p.c.Servers, s)
	return nil
}

// finish applies the defaults that depend on other keys and ZooKeeper's
// silent corrections, which become warnings here.
func (p *parser) finish() error {
	c := p.c
	p.line, p.key = 0, ""
	if c.DataDir == "" {
		return errors.New("zoo.cfg: dataDir is not set")
	}
	if c.DataLogDir == "" {
		c.DataLogDir = c.DataDir
	}
	if c.MinSessionTimeout == unsetTimeout {
		c.MinSessionTimeout = 2 * c.TickTime
	}
	if c.MaxSessionTimeout == unsetTimeout {
		c.MaxSessionTimeout = 20 * c.TickTime
	}
	if c.AutopurgeSnapRetainCount < MinAutopurgeSnapRetainCount {
		p.key = "autopurge.snapRetainCount"
		p.warn(fmt.Sprintf("%d is below the minimum; using %d", c.AutopurgeSnapRetainCount, MinAutopurgeSnapRetainCount))
		c.AutopurgeSnapRetainCount = MinAutopurgeSnapRetainCount
	}
	if c.SnapCount < MinSnapCount {
		p.key = "snapCount"
		p.warn(fmt.Sprintf("%d is below the minimum; using %d", c.SnapCount, MinSnapCount))
		c.SnapCount = MinSnapCount
	}
	slices.SortStableFunc(c.Servers, func(a, b Server) int { return cmp.Compare(a.ID, b.ID) })
	if len(c.Participants()) == 1 && c.StandaloneEnabled {
		p.key = "server.N"
		p.warn("only one participant and standaloneEnabled; running standalone and ignoring the server list")
	}
	return nil
}

// setter parses one value into p.c.
type setter func(p *parser, value string) error

// settings maps every key keeper uses to its setter. Settings that
// ZooKeeper reads as Java system properties are listed under both spellings:
// the zoo.cfg key (ZooKeeper prefixes unknown keys with "zookeeper." and sets
// them as system properties) and the full system property name. See doc.go.
var settings = map[string]setter{
	"tickTime":             millisField(func(c *Config) *time.Duration { return &c.TickTime }),
	"initLimit":            intField(func(c *Config) *int { return &c.InitLimitTicks }),
	"syncLimit":            intField(func(c *Config) *int { return &c.SyncLimitTicks }),
	"dataDir":              dirField(func(c *Config) *string { return &c.DataDir }),
	"dataLogDir":           dirField(func(c *Config) *string { return &c.DataLogDir }),
	"clientPort":           portField(func(c *Config) *int { return &c.ClientPort }),
	"clientPortAddress":    stringField(func(c *Config) *string { return &c.ClientPortAddress }),
	"maxClientCnxns":       intField(func(c *Config) *int { return &c.MaxClientCnxns }),
	"minSessionTimeout":    millisField(func(c *Config) *time.Duration { return &c.MinSessionTimeout }),
	"maxSessionTimeout":    millisField(func(c *Config) *time.Duration { return &c.MaxSessionTimeout }),
	"standaloneEnabled":    boolField(func(c *Config) *bool { return &c.StandaloneEnabled }),
	"reconfigEnabled":      boolField(func(c *Config) *bool { return &c.ReconfigEnabled }),
	"quorumListenOnAllIPs": boolField(func(c *Config) *bool { return &c.QuorumListenOnAllIPs }),
	"electionAlg":          setElectionAlg,
	"peerType":             setPeerType,
	"dynamicConfigFile":    stringField(func(c *Config) *string { return &c.DynamicConfigFile }),
	"version":              setVersion,

	"autopurge.snapRetainCount": intField(func(c *Config) *int { return &c.AutopurgeSnapRetainCount }),
	"autopurge.purgeInterval":   setPurgeInterval,

	"4lw.commands.whitelist":           setFourLetterWhitelist,
	"zookeeper.4lw.commands.whitelist": setFourLetterWhitelist,
	"admin.enableServer":               boolField(func(c *Config) *bool { return &c.AdminEnableServer }),
	"zookeeper.admin.enableServer":     boolField(func(c *Config) *bool { return &c.AdminEnableServer }),
	"admin.serverPort":                 portField(func(c *Config) *int { return &c.AdminServerPort }),
	"zookeeper.admin.serverPort":       portField(func(c *Config) *int { return &c.AdminServerPort }),
	"admin.serverAddress":              stringField(func(c *Config) *string { return &c.AdminServerAddress }),
	"zookeeper.admin.serverAddress":    stringField(func(c *Config) *string { return &c.AdminServerAddress }),
	"admin.forceHttps":                 boolField(func(c *Config) *bool { return &c.AdminForceHTTPS }),
	"zookeeper.admin.forceHttps":       boolField(func(c *Config) *bool { return &c.AdminForceHTTPS }),
	"admin.portUnification":            boolField(func(c *Config) *bool { return &c.AdminPortUnification }),
	"zookeeper.admin.portUnification":  boolField(func(c *Config) *bool { return &c.AdminPortUnification }),
	"admin.needClientAuth":             boolField(func(c *Config) *bool { return &c.AdminNeedClientAuth }),
	"zookeeper.admin.needClientAuth":   boolField(func(c *Config) *bool { return &c.AdminNeedClientAuth }),
	"snapCount":                        intField(func(c *Config) *int { return &c.SnapCount }),
	"zookeeper.snapCount":              intField(func(c *Config) *int { return &c.SnapCount }),
	"preAllocSize":                     setPreAllocSize,
	"zookeeper.preAllocSize":           setPreAllocSize,
	"forceSync":                        setForceSync,
	"zookeeper.forceSync":              setForceSync,
	"extendedTypesEnabled":             boolField(func(c *Config) *bool { return &c.ExtendedTypesEnabled }),
	"zookeeper.extendedTypesEnabled":   boolField(func(c *Config) *bool { return &c.ExtendedTypesEnabled }),
	"enforceQuota":                     boolField(func(c *Config) *bool { return &c.EnforceQuota }),
	"zookeeper.enforceQuota":           boolField(func(c *Config) *bool { return &c.EnforceQuota }),
	"snapshot.trust.empty":             boolField(func(c *Config) *bool { return &c.SnapshotTrustEmpty }),
	"zookeeper.snapshot.trust.empty":   boolField(func(c *Config) *bool { return &c.SnapshotTrustEmpty }),

	"DigestAuthenticationProvider.superDigest":           setSuperDigest,
	"zookeeper.DigestAuthenticationProvider.superDigest": setSuperDigest,
	"superDigest": setSuperDigest,

	"jute.maxbuffer": intField(func(c *Config) *int { return &c.JuteMaxBufferBytes }),

	"znode.container.checkIntervalMs": millisField(func(c *Config) *time.Duration { return &c.ContainerCheckInterval }),

	"maxCnxns":                                intField(func(c *Config) *int { return &c.MaxCnxns }),
	"globalOutstandingLimit":                  intField(func(c *Config) *int { return &c.GlobalOutstandingLimit }),
	"zookeeper.globalOutstandingLimit":        intField(func(c *Config) *int { return &c.GlobalOutstandingLimit }),
	"request_throttle_max_requests":           intField(func(c *Config) *int { return &c.RequestThrottleMaxRequests }),
	"zookeeper.request_throttle_max_requests": intField(func(c *Config) *int { return &c.RequestThrottleMaxRequests }),
	"request_throttle_stall_time":             millisField(func(c *Config) *time.Duration { return &c.RequestThrottleStallTime }),
	"zookeeper.request_throttle_stall_time":   millisField(func(c *Config) *time.Duration { return &c.RequestThrottleStallTime }),
	"request_throttle_drop_stale":             setDropStale,
	"zookeeper.request_throttle_drop_stale":   setDropStale,
	"readonlymode.enabled":                    boolField(func(c *Config) *bool { return &c.ReadOnlyModeEnabled }),
}

// parseInt parses a Java int: optional sign, decimal digits, 32 bits.
func parseInt(v string) (int, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	if errors.Is(err, strconv.ErrRange) {
		return 0, errors.New("out of range for a 32-bit integer")
	}
	if err != nil {
		return 0, errors.New("not an integer")
	}
	return int(n), nil
}

func intField(field func(*Config) *int) setter {
	return func(p *parser, v string) error {
		n, err := parseInt(v)
		if err != nil {
			return err
		}
		*field(p.c) = n
		return nil
	}
}

func millisField(field func(*Config) *time.Duration) setter {
	return func(p *parser, v string) error {
		n, err := parseInt(v)
		if err != nil {
			return err
		}
		*field(p.c) = time.Duration(n) * time.Millisecond
		return nil
	}
}

func portField(field func(*Config) *int) setter {
	return func(p *parser, v string) error {
		n, err := parseInt(v)
		if err != nil {
			return err
		}
		if n < 0 || n > 65535 {
			return errors.New("port out of range 0-65535")
		}
		*field(p.c) = n
		return nil
	}
}

func stringField(field func(*Config) *string) setter {
	return func(p *parser, v string) error {
		if v == "" {
			return errors.New("empty")
		}
		*field(p.c) = v
		return nil
	}
}

func dirField(field func(*Config) *string) setter {
	return func(p *parser, v string) error {
		if v == "" {
			return errors.New("empty")
		}
		if !filepath.IsAbs(v) {
			p.warn("relative path; it is resolved against the working directory")
		}
		*field(p.c) = v
		return nil
	}
}

// boolField parses true or false in any case, as QuorumPeerConfig does.
func boolField(field func(*Config) *bool) setter {
	return func(p *parser, v string) error {
		switch strings.ToLower(v) {
		case "true":
			*field(p.c) = true
		case "false":
			*field(p.c) = false
		default:
			return errors.New("want true or false")
		}
		return nil
	}
}

func setPurgeInterval(p *parser, v string) error {
	n, err := parseInt(v)
	if err != nil {
		return err
	}
	p.c.AutopurgePurgeInterval = time.Duration(n) * time.Hour
	return nil
}

func setPreAllocSize(p *parser, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > 1<<40 {
		return errors.New("want a positive size in KiB")
	}
	p.c.PreAllocSizeKB = n
	return nil
}

// setForceSync accepts yes or no. ZooKeeper treats every value but "no" as
// yes, so a "false" there means yes; keeper rejects it rather than guess.
func setForceSync(p *parser, v string) error {
	switch strings.ToLower(v) {
	case "yes":
		p.c.ForceSync = true
	case "no":
		p.c.ForceSync = false
	default:
		return errors.New("want yes or no")
	}
	return nil
}

func setFourLetterWhitelist(p *parser, v string) error {
	var words []string
	for w := range strings.SplitSeq(v, ",") {
		if w = strings.TrimSpace(w); w != "" && !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	p.c.FourLetterWhitelist = words
	return nil
}

func setSuperDigest(p *parser, v string) error {
	if v != "" {
		user, digest, ok := strings.Cut(v, ":")
		if !ok || user == "" || digest == "" {
			return errors.New("want user:digest")
		}
	}
	p.c.SuperDigest = v
	return nil
}

// setElectionAlg accepts the only algorithm ZooKeeper 3.8 has.
func setElectionAlg(_ *parser, v string) error {
	if n, err := parseInt(v); err != nil || n != 3 {
		return errors.New("only 3 is supported")
	}
	return nil
}

// setVersion reads the version line of a configuration in the static
// file, in hex as ZooKeeper writes it.
func setVersion(p *parser, v string) error {
	n, err := parseVersion(v)
	if err != nil {
		return err
	}
	p.c.ConfigVersion = n
	return nil
}

// setDropStale reads request_throttle_drop_stale. keeper drops the
// requests of a closed connection whatever it says (they wait in the
// connection, not in a queue of the server's), so false only warns.
func setDropStale(p *parser, v string) error {
	if err := boolField(func(c *Config) *bool { return &c.RequestThrottleDropStale })(p, v); err != nil {
		return err
	}
	if !p.c.RequestThrottleDropStale {
		p.warn("keeper always drops the requests of closed connections")
	}
	return nil
}

// setPeerType checks the value; as in ZooKeeper the server list decides
// the role, so the value is not kept.
func setPeerType(_ *parser, v string) error {
	_, err := parseRole(v)
	return err
}

// ignoredKeys are ZooKeeper settings keeper accepts without acting on them:
// none of them protects data or access (those are in protections).
var ignoredKeys = map[string]bool{
	"localSessionsEnabled":            true,
	"localSessionsUpgradingEnabled":   true,
	"observerMasterPort":              true,
	"clientPortListenBacklog":         true,
	"connectToLearnerMasterLimit":     true,
	"syncEnabled":                     true,
	"quorum.cnxn.threads.size":        true,
	"oraclePath":                      true,
	"commitLogCount":                  true,
	"snapSizeLimitInKb":               true,
	"txnLogSizeLimitInKb":             true,
	"cnxTimeout":                      true,
	"serverCnxnFactory":               true,
	"digest.enabled":                  true,
	"admin.commandURL":                true,
	"admin.idleTimeout":               true,
	"maxResponseCacheSize":            true,
	"maxGetChildrenResponseCacheSize": true,
	"electionPortBindRetry":           true,
	"fsync.warningthresholdms":        true,
}

// ignoredPrefixes are families of ZooKeeper settings keeper ignores.
var ignoredPrefixes = []string{
	"jvm.pause.", "metricsProvider.", "multiAddress.",
}

func hasIgnoredPrefix(key string) bool {
	for _, prefix := range ignoredPrefixes {
		if strings.HasPrefix(key, prefix) {
			return true
		}
	}
	return false
}
