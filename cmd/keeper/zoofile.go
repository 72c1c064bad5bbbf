package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"keeper/coordination/zoocfg"
)

// readZooFile parses the zoo.cfg at path. It refuses a key one edit away
// from one ZooKeeper knows (a misspelt tickTime would leave tickTime at its
// default without a word), warns about the other unknown keys, which
// ZooKeeper turns into system properties, and says where each problem is:
// the file's own name, the line and the key. With dynamicConfigFile it
// reads the servers from that file, and zoo.cfg.dynamic.next beside path,
// as ZooKeeper does (zoocfg.Load).
func readZooFile(path string, logger *slog.Logger) (*zoocfg.Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	zc, warnings, err := zoocfg.Load(path, func(name string) ([]byte, error) {
		if name == path {
			return raw, nil
		}
		return os.ReadFile(name)
	})
	if err != nil {
		return nil, zooFileError(path, err)
	}
	var typos []error
	for _, w := range warnings {
		if known, ok := zoocfg.Typo(w); ok {
			typos = append(typos, fmt.Errorf("%s:%d: unknown key %s; did you mean %s?", path, w.Line, w.Key, known))
		}
	}
	if len(typos) > 0 {
		return nil, errors.Join(typos...)
	}
	for _, w := range warnings {
		attrs := []any{"file", path, "key", w.Key, "warning", w.Message}
		if w.Line > 0 {
			attrs = append(attrs, "line", w.Line)
		}
		logger.Warn("config warning", attrs...)
	}
	return zc, nil
}

// zooFileError words an error of zoocfg for the file at path: its name
// instead of "zoo.cfg", and no package name.
func zooFileError(path string, err error) error {
	var ve *zoocfg.Error
	if errors.As(err, &ve) {
		return fmt.Errorf("%s:%d: %s: invalid value %q: %v", path, ve.Line, ve.Key, ve.Value, ve.Err)
	}
	var lines []string
	for l := range strings.SplitSeq(err.Error(), "\n") { // Validate joins its errors
		l = strings.TrimPrefix(l, "zoocfg: ")
		if rest, ok := strings.CutPrefix(l, "zoo.cfg:"); ok && rest != "" && rest[0] >= '0' && rest[0] <= '9' {
			l = path + ":" + rest // zoo.cfg:LINE: ...
		} else {
			l = path + ": " + strings.TrimPrefix(strings.TrimPrefix(l, "zoo.cfg:"), " ")
		}
		lines = append(lines, l)
	}
	return errors.New(strings.Join(lines, "\n"))
}
