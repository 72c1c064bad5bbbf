package bookie

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"

	"keeper/internal/vfs"
	"keeper/ledgerstore/bkproto"
)

// CookieLayoutVersion is the cookie layout keeper writes: BookKeeper's
// current one, a version line followed by the protobuf text of
// CookieFormat.
const CookieLayoutVersion = 5

// CookieFileName is the name of a directory's copy of the cookie, in the
// directory's "current" subdirectory.
const CookieFileName = "VERSION"

// maxCookieBytes bounds a cookie read from a disk or the metadata store; a
// real one is a few hundred bytes.
const maxCookieBytes = 64 << 10

// ErrInvalidCookie means the bookie's disks or its metadata do not belong
// together (BookKeeper's InvalidCookieException): a disk was wiped,
// swapped, or belongs to another bookie or cluster, or the cookie in the
// metadata store is gone. The bookie refuses to start; the error says why.
var ErrInvalidCookie = errors.New("bookie: invalid cookie")

// Cookie binds a bookie's identity to its directories and its cluster
// (docs/bookkeeper-protocol.md §8.2). A copy lives in every journal, ledger and index directory
// and one in the metadata store at <ledgers root>/cookies/<bookie id>.
type Cookie struct {
	LayoutVersion int
	BookieID      string // CookieFormat.bookieHost
	JournalDirs   string // the journal directories joined by ','
	LedgerDirs    string // "<count>\t<dir1>\t<dir2>..."
	InstanceID    string // the cluster's INSTANCEID; "" if it has none
	IndexDirs     string // like LedgerDirs; "" when no index directory is configured
}

// encodeDirs returns a directory list in cookie form: the count, then
// each directory, separated by tabs.
func encodeDirs(dirs []string) string {
	return strconv.Itoa(len(dirs)) + "\t" + strings.Join(dirs, "\t")
}

// masterCookie is the cookie the configuration implies.
func masterCookie(cfg Config, bookieID, instanceID string) Cookie {
	c := Cookie{
		LayoutVersion: CookieLayoutVersion,
		BookieID:      bookieID,
		JournalDirs:   strings.Join(cfg.JournalDirs, ","),
		LedgerDirs:    encodeDirs(cfg.LedgerDirs),
		InstanceID:    instanceID,
	}
	if cfg.IndexDir != "" {
		c.IndexDirs = encodeDirs([]string{cfg.IndexDir})
	}
	return c
}

// Encode returns the cookie as BookKeeper writes it: the layout version on
// a line, then CookieFormat in protobuf text format, one `name: "value"`
// line per set field, as Java's TextFormat prints it.
func (c Cookie) Encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n", c.LayoutVersion)
	field := func(name, v string) {
		b.WriteString(name)
		b.WriteString(": \"")
		b.WriteString(escapeText(v))
		b.WriteString("\"\n")
	}
	field("bookieHost", c.BookieID)
	field("journalDir", c.JournalDirs)
	field("ledgerDirs", c.LedgerDirs)
	if c.InstanceID != "" {
		field("instanceId", c.InstanceID)
	}
	if c.IndexDirs != "" {
		field("indexDirs", c.IndexDirs)
	}
	return b.Bytes()
}

// escapeText escapes a string as protobuf's Java TextFormat does: C
// escapes for the usual control characters, quotes and backslash, and
// three-digit octal for every other byte outside printable ASCII.
func escapeText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\v':
			b.WriteString(`\v`)
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case '"':
			b.WriteString(`\"`)
		default:
			if c >= 0x20 && c < 0x7f {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, "\\%03o", c)
			}
		}
	}
	return b.String()
}

// ParseCookie reads a cookie in layout 3 (four lines), 4 or 5 (version
// line and protobuf text); layouts before 3 are refused, as BookKeeper
// refuses them. Unknown text-format fields, from a newer layout, are
// ignored.
func ParseCookie(data []byte) (Cookie, error) {
	if len(data) > maxCookieBytes {
		return Cookie{}, fmt.Errorf("%w: cookie of %d bytes", ErrInvalidCookie, len(data))
	}
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	v, err := strconv.Atoi(strings.TrimSpace(string(first)))
	if err != nil {
		return Cookie{}, fmt.Errorf("%w: layout version line %q", ErrInvalidCookie, first)
	}
	c := Cookie{LayoutVersion: v}
	switch {
	case v < 3:
		return Cookie{}, fmt.Errorf("%w: cookie layout %d is too old", ErrInvalidCookie, v)
	case v == 3:
		lines := strings.Split(string(rest), "\n")
		if len(lines) < 3 {
			return Cookie{}, fmt.Errorf("%w: layout 3 cookie of %d lines", ErrInvalidCookie, len(lines)+1)
		}
		c.BookieID, c.JournalDirs, c.LedgerDirs = lines[0], lines[1], lines[2]
	default:
		var f bkproto.CookieFormat
		if err := (prototext.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(rest, &f); err != nil {
			return Cookie{}, fmt.Errorf("%w: %v", ErrInvalidCookie, err)
		}
		c.BookieID, c.JournalDirs, c.LedgerDirs = f.GetBookieHost(), f.GetJournalDir(), f.GetLedgerDirs()
		c.InstanceID, c.IndexDirs = f.GetInstanceId(), f.GetIndexDirs()
	}
	return c, nil
}

// Verify checks that other, a cookie found on a disk or in the metadata
// store, matches c, the cookie the configuration implies: same bookie id,
// journal, ledger and index directories, and cluster instance id. The
// error matches ErrInvalidCookie and says which field differs.
func (c Cookie) Verify(other Cookie) error {
	mismatch := func(what, want, got string) error {
		return fmt.Errorf("%w: %s is %q in the cookie but %q in the configuration", ErrInvalidCookie, what, got, want)
	}
	switch {
	case other.LayoutVersion < 3:
		return fmt.Errorf("%w: cookie layout %d is too old", ErrInvalidCookie, other.LayoutVersion)
	case other.BookieID != c.BookieID:
		return mismatch("the bookie id", c.BookieID, other.BookieID)
	case other.JournalDirs != c.JournalDirs:
		return mismatch("journalDirectories", c.JournalDirs, other.JournalDirs)
	case other.LedgerDirs != c.LedgerDirs:
		return mismatch("ledgerDirectories", c.LedgerDirs, other.LedgerDirs)
	case !(c.LayoutVersion >= 5 && other.LayoutVersion < 5) && other.IndexDirs != c.IndexDirs:
		return mismatch("indexDirectories", c.IndexDirs, other.IndexDirs)
	case other.InstanceID != c.InstanceID:
		return fmt.Errorf("%w: the cookie names cluster instance %q but the metadata store is instance %q: "+
			"this disk belongs to another cluster, or the metadata was formatted again", ErrInvalidCookie,
			other.InstanceID, c.InstanceID)
	}
	return nil
}

// cookieDirs returns the directories that carry a copy of the cookie: the
// "current" subdirectory of every journal, ledger and index directory.
func cookieDirs(cfg Config) []string {
	var dirs []string
	for _, d := range cfg.JournalDirs {
		dirs = append(dirs, filepath.Join(d, "current"))
	}
	for _, d := range cfg.LedgerDirs {
		dirs = append(dirs, filepath.Join(d, "current"))
	}
	if cfg.IndexDir != "" && !containsString(cfg.LedgerDirs, cfg.IndexDir) {
		dirs = append(dirs, filepath.Join(cfg.IndexDir, "current"))
	}
	return dirs
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// readDirCookie reads dir's cookie; found is false if there is none.
func readDirCookie(fsys vfs.FS, dir string) (c Cookie, found bool, err error) {
	path := filepath.Join(dir, CookieFileName)
	data, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return Cookie{}, false, nil
	}
	if err != nil {
		return Cookie{}, false, fmt.Errorf("bookie: read cookie %s: %w", path, err)
	}
	c, err = ParseCookie(data)
	if err != nil {
		return Cookie{}, false, fmt.Errorf("%s: %w", path, err)
	}
	return c, true, nil
}

// writeDirCookie stores c in dir, creating dir, atomically: write a
// temporary file, fsync, rename, fsync the directory. (BookKeeper
// overwrites the file in place.)
func writeDirCookie(fsys vfs.FS, dir string, c Cookie) error {
	if err := vfs.MkdirAllSync(fsys, dir, 0o755); err != nil {
		return fmt.Errorf("bookie: create %s: %w", dir, err)
	}
	path := filepath.Join(dir, CookieFileName)
	tmp := path + ".tmp"
	f, err := fsys.Create(tmp)
	if err != nil {
		return fmt.Errorf("bookie: create %s: %w", tmp, err)
	}
	if _, err := f.Write(c.Encode()); err != nil {
		_ = f.Close() // the write error is the one to report
		return fmt.Errorf("bookie: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("bookie: sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bookie: close %s: %w", tmp, err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return fmt.Errorf("bookie: rename %s: %w", tmp, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("bookie: sync %s: %w", dir, err)
	}
	return nil
}

// dirEmpty reports whether dir is missing or holds nothing.
func dirEmpty(fsys vfs.FS, dir string) (bool, error) {
	names, err := fsys.List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("bookie: list %s: %w", dir, err)
	}
	return len(names) == 0, nil
}

// cookieStore is where the metadata store's copy of the cookie lives.
type cookieStore interface {
	// readCookie returns the stored cookie, found false if there is none.
	readCookie() (data []byte, found bool, err error)
	// createCookie stores the cookie; it fails if one exists.
	createCookie(data []byte) error
	// cookiePath names the copy, for messages.
	cookiePath() string
}

// checkCookies applies BookKeeper's decision table (docs/bookkeeper-protocol.md §8.2) to the
// cookies of the directories and of the metadata store, and stamps a new
// bookie's cookies:
//
//	metadata cookie  directory cookies       outcome
//	none             none, dirs all empty    new bookie: stamp every dir, then the metadata
//	none             none, some dir has data refuse: data without a cookie
//	none             some or all present     refuse: the metadata lost this bookie's cookie
//	present          all present             start, if every cookie matches the configuration
//	present          some missing            refuse: those disks were wiped or swapped
//
// Any cookie that does not match (another bookie id, other directories,
// another cluster's instance id) refuses too. Every refusal matches
// ErrInvalidCookie and says what to look at.
func checkCookies(fsys vfs.FS, dirs []string, store cookieStore, master Cookie) error {
	data, inMeta, err := store.readCookie()
	if err != nil {
		return err
	}
	if inMeta {
		metaCookie, err := ParseCookie(data)
		if err != nil {
			return fmt.Errorf("%s: %w", store.cookiePath(), err)
		}
		if err := master.Verify(metaCookie); err != nil {
			return fmt.Errorf("the cookie at %s does not match this bookie: %w", store.cookiePath(), err)
		}
	}
	var missing, stamped []string
	for _, dir := range dirs {
		c, found, err := readDirCookie(fsys, dir)
		if err != nil {
			return err
		}
		if !found {
			missing = append(missing, dir)
			continue
		}
		stamped = append(stamped, dir)
		if err := master.Verify(c); err != nil {
			return fmt.Errorf("the cookie in %s does not match this bookie (was the disk swapped?): %w", dir, err)
		}
	}
	switch {
	case len(missing) == 0 && inMeta:
		return nil
	case len(missing) == 0:
		return fmt.Errorf("%w: the directories carry cookies but %s does not exist: the metadata store lost "+
			"this bookie's cookie, was formatted again, or the bookie id changed", ErrInvalidCookie, store.cookiePath())
	case inMeta:
		return fmt.Errorf("%w: %s exists but %s %s no cookie: the disk was wiped or replaced; "+
			"this bookie's data there is gone", ErrInvalidCookie, store.cookiePath(), strings.Join(missing, ", "),
			plural(len(missing), "has", "have"))
	case len(stamped) > 0:
		return fmt.Errorf("%w: %s %s a cookie but %s %s none, and %s does not exist: the disks do not belong together",
			ErrInvalidCookie, strings.Join(stamped, ", "), plural(len(stamped), "has", "have"),
			strings.Join(missing, ", "), plural(len(missing), "has", "have"), store.cookiePath())
	}
	for _, dir := range dirs {
		empty, err := dirEmpty(fsys, dir)
		if err != nil {
			return err
		}
		if !empty {
			return fmt.Errorf("%w: %s holds data but no cookie, and %s does not exist: it is not this bookie's "+
				"disk, or its cookie was deleted", ErrInvalidCookie, dir, store.cookiePath())
		}
	}
	return stampCookies(fsys, dirs, store, master)
}

// stampCookies writes a new bookie's cookie to every directory, then to
// the metadata store, in BookKeeper's order. A crash in between leaves
// directory cookies without a metadata cookie, which the next start
// refuses: an operator removes the directory cookies of a bookie that
// never served.
func stampCookies(fsys vfs.FS, dirs []string, store cookieStore, master Cookie) error {
	for _, dir := range dirs {
		if err := writeDirCookie(fsys, dir, master); err != nil {
			return err
		}
	}
	return store.createCookie(master.Encode())
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
