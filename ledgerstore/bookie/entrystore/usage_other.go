//go:build !linux

package entrystore

import (
	"errors"
	"fmt"
)

// statfsUsage is implemented for Linux only; elsewhere set
// Config.DiskUsage.
func statfsUsage(dir string) (DirUsage, error) {
	return DirUsage{}, fmt.Errorf("entrystore: disk usage of %s: %w", dir, errors.ErrUnsupported)
}
