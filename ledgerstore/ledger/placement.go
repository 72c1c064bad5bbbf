package ledger

import "fmt"

// Placement is the striping of a ledger's entries over an ensemble and the
// quorum arithmetic built on it (docs/bookkeeper-protocol.md §1.1, §1.5). Positions are indexes
// into a segment's Bookies.
type Placement struct {
	EnsembleSize int // E
	WriteQuorum  int // Qw: bookies each entry is sent to
	AckQuorum    int // Qa: acknowledgements that make an entry replicated
}

// NewPlacement returns the placement for E, Qw and Qa, which must satisfy
// E ≥ Qw ≥ Qa ≥ 1.
func NewPlacement(ensembleSize, writeQuorum, ackQuorum int) (Placement, error) {
	if !(ensembleSize >= writeQuorum && writeQuorum >= ackQuorum && ackQuorum >= 1) {
		return Placement{}, fmt.Errorf("ledger: need E ≥ Qw ≥ Qa ≥ 1, have E=%d Qw=%d Qa=%d",
			ensembleSize, writeQuorum, ackQuorum)
	}
	return Placement{EnsembleSize: ensembleSize, WriteQuorum: writeQuorum, AckQuorum: ackQuorum}, nil
}

// Position returns the ensemble position of the k-th member (0 ≤ k < Qw)
// of entryID's write set: (entryID + k) mod E. entryID must be ≥ 0.
func (p Placement) Position(entryID int64, k int) int {
	return int((entryID + int64(k)) % int64(p.EnsembleSize))
}

// WriteSet returns the positions of entryID's write set, in order.
func (p Placement) WriteSet(entryID int64) []int {
	ws := make([]int, p.WriteQuorum)
	for k := range ws {
		ws[k] = p.Position(entryID, k)
	}
	return ws
}

// InWriteSet reports whether position pos is in entryID's write set.
func (p Placement) InWriteSet(entryID int64, pos int) bool {
	if pos < 0 || pos >= p.EnsembleSize {
		return false
	}
	first := int(entryID % int64(p.EnsembleSize))
	return (pos-first+p.EnsembleSize)%p.EnsembleSize < p.WriteQuorum
}

// CoverageQuorum is Qw − Qa + 1: the definitive answers from one write set
// that leave no ack quorum among the bookies not heard from. Recovery may
// declare an entry absent only with this many explicit negatives from its
// write set (quorum coverage, QC).
func (p Placement) CoverageQuorum() int {
	return p.WriteQuorum - p.AckQuorum + 1
}

// EnoughNegatives reports whether n explicit negatives (NoSuchEntry or
// NoSuchLedger, from distinct bookies of one write set) prove the entry
// was never acknowledged.
func (p Placement) EnoughNegatives(n int) bool {
	return n >= p.CoverageQuorum()
}

// EnsembleCovered reports ensemble coverage (EC): every one of the E write
// sets has at least Qw − Qa + 1 positions whose answer is definitive.
// definitive has one element per position. Equivalently, no window of Qw
// consecutive positions holds Qa or more positions whose answer is unknown.
// Fencing needs EC before recovery may trust the LAC it read: then every
// write set has fewer than Qa unfenced bookies, so the old writer can never
// again collect Qa acknowledgements.
func (p Placement) EnsembleCovered(definitive []bool) bool {
	if len(definitive) != p.EnsembleSize {
		return false
	}
	for start := range p.EnsembleSize {
		unknown := 0
		for k := range p.WriteQuorum {
			if !definitive[(start+k)%p.EnsembleSize] {
				unknown++
			}
		}
		if unknown >= p.AckQuorum {
			return false
		}
	}
	return true
}
