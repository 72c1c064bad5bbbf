package durablelog

import "fmt"

// RecordError says where a log is damaged. errors.Is matches it against
// its Err: the format's torn or corrupt sentinel (Options), or another
// error the format chose.
type RecordError struct {
	File   string // the log file's path
	Offset int64  // where the damaged record (or the file header, 0) starts
	Reason string // what is wrong, for people
	Err    error
}

// Error says what is wrong and where.
func (e *RecordError) Error() string {
	return fmt.Sprintf("%v: %s at offset %d: %s", e.Err, e.File, e.Offset, e.Reason)
}

// Unwrap returns Err.
func (e *RecordError) Unwrap() error { return e.Err }

// Options names a log format in the errors the package returns.
type Options struct {
	// Prefix starts the messages of I/O errors ("txnlog", "journal").
	Prefix string
	// Noun names the whole log in messages ("log", "journal"): a torn
	// record "in a file that is not the log's last".
	Noun string
	// BadHeader is the reason given for a file whose header is wrong.
	BadHeader string
	// Torn is the sentinel of a torn tail in the log's last file; Corrupt
	// the sentinel of every other damage.
	Torn, Corrupt error
}
