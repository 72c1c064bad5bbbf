package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Network locations of bookies whose rack is not known, as BookKeeper
// names them: the rack-aware policy puts such a bookie in DefaultRack, the
// region-aware one in DefaultRegionRack (docs/bookkeeper-protocol.md §8.6).
const (
	DefaultRack       = "/default-rack"
	DefaultRegionRack = "/default-region/default-rack"
)

// UnknownRegion is the region of a bookie whose location names none (one
// in DefaultRegionRack, or a location with a single component).
const UnknownRegion = "UnknownRegion"

// maxRackInfoBytes bounds the rack-information document: Pulsar keeps it
// in one znode, which ZooKeeper caps at jute.maxbuffer (about 1 MB).
const maxRackInfoBytes = 1 << 20

// maxLocationBytes bounds one bookie's network location.
const maxLocationBytes = 1024

// ParseRackInfo decodes the rack information Apache Pulsar's
// BookieRackAffinityMapping keeps in the /bookies znode: a JSON object of
// groups, each an object of bookie addresses to {"rack": ..., "hostname":
// ...}. It returns each bookie's network location as BookKeeper resolves
// it: the rack with a leading "/" added when missing. A bookie with an
// empty rack or "/" is left out (it gets the policy's default rack). A
// bookie listed in several groups takes its rack from the first group in
// sorted order. Unknown fields are ignored, as Pulsar ignores them.
func ParseRackInfo(data []byte) (map[BookieID]string, error) {
	if len(data) > maxRackInfoBytes {
		return nil, fmt.Errorf("ledger: rack information of %d bytes is too large", len(data))
	}
	var groups map[string]map[string]struct {
		Rack     *string `json:"rack"`
		Hostname *string `json:"hostname"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&groups); err != nil {
		return nil, fmt.Errorf("ledger: rack information: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("ledger: rack information: data after the JSON object")
	}
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	slices.Sort(names)
	out := make(map[BookieID]string)
	for _, g := range names {
		for addr, info := range groups[g] {
			id := BookieID(addr)
			if _, seen := out[id]; seen || info.Rack == nil {
				continue
			}
			rack := *info.Rack
			if strings.TrimSpace(rack) == "" || strings.TrimSpace(rack) == "/" {
				continue
			}
			if !strings.HasPrefix(rack, "/") {
				rack = "/" + rack
			}
			if len(rack) > maxLocationBytes {
				return nil, fmt.Errorf("ledger: rack information: bookie %q: rack of %d bytes", addr, len(rack))
			}
			out[id] = rack
		}
	}
	return out, nil
}

// ParseStaticRacks reads keeper's static mapping: one "bookie location"
// pair a line ("10.0.0.1:3181 /dc1/rack2"; '=' or whitespace between),
// '#' comments and blank lines ignored. A location without a leading "/"
// gets one. A bookie named twice is an error.
func ParseStaticRacks(text string) (map[BookieID]string, error) {
	if len(text) > maxRackInfoBytes {
		return nil, fmt.Errorf("ledger: rack mapping of %d bytes is too large", len(text))
	}
	out := make(map[BookieID]string)
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.FieldsFunc(line, func(r rune) bool { return r == '=' || r == ' ' || r == '\t' })
		if len(f) != 2 {
			return nil, fmt.Errorf("ledger: rack mapping line %d: want \"bookie rack\", have %q", i+1, line)
		}
		id, rack := BookieID(f[0]), f[1]
		if err := id.Validate(); err != nil {
			return nil, fmt.Errorf("ledger: rack mapping line %d: %w", i+1, err)
		}
		if !strings.HasPrefix(rack, "/") {
			rack = "/" + rack
		}
		if rack == "/" || len(rack) > maxLocationBytes {
			return nil, fmt.Errorf("ledger: rack mapping line %d: bad rack %q", i+1, f[1])
		}
		if _, dup := out[id]; dup {
			return nil, fmt.Errorf("ledger: rack mapping line %d: bookie %s named twice", i+1, id)
		}
		out[id] = rack
	}
	return out, nil
}

// regionOf returns the region of a network location: its first
// component ("/dc1/rack2" and "/dc1" are in dc1), or UnknownRegion for
// DefaultRegionRack and for a location that names none.
func regionOf(location string) string {
	if location == DefaultRegionRack {
		return UnknownRegion
	}
	parts := strings.Split(location, "/")
	if len(parts) < 2 || parts[1] == "" {
		return UnknownRegion
	}
	return parts[1]
}
