package zoocfg

import (
	"slices"
	"strings"
)

// The files ZooKeeper 3.8 writes as the configuration changes, with
// reconfigEnabled (docs/configuration.md, Dynamic configuration files).
// These functions give their bytes; the server writes them atomically.

// DynamicFileData is what ZooKeeper writes for e: its server lines, each
// "server.N=<spec>", sorted as strings and joined by newlines with no
// final one. The file dynamicConfigFile names (zoo.cfg.dynamic.<version>)
// has no version line, since its name carries the version; the
// configuration last seen proposed (zoo.cfg.dynamic.next) keeps it,
// sorted among the rest (withVersion).
func (e *Ensemble) DynamicFileData(withVersion bool) []byte {
	lines := strings.Split(string(e.Data()), "\n")
	if !withVersion {
		lines = slices.DeleteFunc(lines, func(l string) bool { return strings.HasPrefix(l, "version") })
	}
	slices.Sort(lines)
	return []byte(strings.Join(lines, "\n"))
}

// EditStatic returns the static configuration file as ZooKeeper rewrites
// it when a configuration becomes active (editStaticConfig): every key of
// the file as java.util.Properties holds it (the last value of a repeated
// key, in the Properties' iteration order, see javaorder.go), as
// "key=value\n" with the value trimmed, except server.*, group*, weight*,
// dynamicConfigFile*, peerType* and, when eraseClientPort (this server's
// line in the new configuration has a client address), clientPort*; then
// "dynamicConfigFile=<dynamicPath>\n". dynamicPath must be the dynamic
// file's canonical path, as ZooKeeper writes it.
func EditStatic(static []byte, dynamicPath string, eraseClientPort bool) ([]byte, error) {
	props, err := readDynamic(static, "static configuration")
	if err != nil {
		return nil, err
	}
	value := map[string]string{}
	for _, p := range props {
		value[p.key] = p.value
	}
	var b strings.Builder
	for _, k := range propertiesOrder(keysOf(props)) {
		switch {
		case strings.HasPrefix(k, "server."), strings.HasPrefix(k, "group"), strings.HasPrefix(k, "weight"),
			strings.HasPrefix(k, "dynamicConfigFile"), strings.HasPrefix(k, "peerType"),
			eraseClientPort && strings.HasPrefix(k, "clientPort"):
			continue
		}
		b.WriteString(k + "=" + strings.TrimFunc(value[k], func(r rune) bool { return r <= ' ' }) + "\n")
	}
	b.WriteString("dynamicConfigFile=" + dynamicPath + "\n")
	return []byte(b.String()), nil
}
