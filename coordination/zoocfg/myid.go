package zoocfg

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// ParseMyID parses the contents of DataDir/myid: the server's id, in
// decimal, on the first line. ZooKeeper parses that line as a Java long
// without trimming; keeper also allows blank space around the number. The
// id must be positive (ZooKeeper's documentation asks for 1-255; larger ids
// are accepted here as ZooKeeper's code accepts them, and Validate bounds
// them when extended types are enabled).
func ParseMyID(data []byte) (int64, error) {
	line := data
	if i := bytes.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return 0, errors.New("myid: empty")
	}
	id, err := strconv.ParseInt(string(line), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("myid: %.32q is not a number", line)
	}
	if id <= 0 {
		return 0, fmt.Errorf("myid: %d is not positive", id)
	}
	return id, nil
}
