package httpadmin

import (
	"context"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"keeper/ledgerstore/bookierpc"
	"keeper/ledgerstore/ledger"
)

// The endpoints that look at the whole cluster: cluster_info and
// list_bookie_info (docs/bookie-http.md).

// clusterInfo is GET /api/v1/bookie/cluster_info: the auditor, whether
// any ledger is under-replicated, whether replication is enabled, and the
// bookies counted by state (every bookie with a cookie; writable and
// read-only registered ones; the rest unavailable).
func (a *api) clusterInfo(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, "Only GET is supported.", http.MethodGet) {
		return
	}
	a.withRecovery(w, r, func(ctx context.Context, rec Recovery) {
		marked, _, err := rec.UnderReplicated(ctx, "", "")
		if err != nil {
			a.failed(w, "cluster_info", err)
			return
		}
		enabled, err := rec.ReplicationEnabled(ctx)
		if err != nil {
			a.failed(w, "cluster_info", err)
			return
		}
		// As in BookKeeper, an auditor that cannot be read counts as none.
		auditor, elected, err := rec.CurrentAuditor(ctx)
		if err != nil {
			a.o.Logger.Warn("cluster_info: could not read the auditor", "err", err)
			auditor, elected = "", false
		}
		all, err := a.o.Metadata.CookieBookies(ctx)
		if err != nil {
			a.failed(w, "cluster_info", err)
			return
		}
		reg, err := a.o.Metadata.Bookies(ctx)
		if err != nil {
			a.failed(w, "cluster_info", err)
			return
		}
		jsonBody(w, obj{
			{"auditorElected", elected},
			{"auditorId", auditor},
			{"clusterUnderReplicated", len(marked) > 0},
			{"ledgerReplicationEnabled", enabled},
			{"totalBookiesCount", len(all)},
			{"writableBookiesCount", len(reg.Writable)},
			{"readonlyBookiesCount", len(reg.ReadOnly)},
			{"unavailableBookiesCount", len(all) - len(reg.Writable) - len(reg.ReadOnly)},
		})
	})
}

// failed answers a request whose backend failed where BookKeeper's
// service lets the exception reach its server.
func (a *api) failed(w http.ResponseWriter, what string, err error) {
	a.o.Logger.Warn("admin request failed", "endpoint", what, "err", err)
	internalError(w)
}

// Bounds of list_bookie_info: BookKeeper's client gives each bookie
// getBookieInfoTimeoutSecs (5 s by default); keeper asks at most
// bookieInfoParallel bookies at once.
const (
	bookieInfoTimeout  = 5 * time.Second
	bookieInfoParallel = 8
)

// listBookieInfo is GET /api/v1/bookie/list_bookie_info: each registered
// bookie's free and total disk bytes, asked of the bookie itself
// (GET_BOOKIE_INFO), then their sums. A bookie that does not answer is
// left out, as in BookKeeper.
func (a *api) listBookieInfo(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, notGet, http.MethodGet) || a.noMetadata(w) {
		return
	}
	ctx, cancel := mdContext(r)
	defer cancel()
	reg, err := a.o.Metadata.Bookies(ctx)
	if err != nil {
		a.failed(w, "list_bookie_info", err)
		return
	}
	ids := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(reg.Writable), reg.ReadOnly...))))
	type info struct {
		ok          bool
		free, total int64
	}
	infos := make([]info, len(ids))
	sem := make(chan struct{}, bookieInfoParallel)
	var wg sync.WaitGroup
	for i, id := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			free, total, err := a.bookieInfo(ctx, id)
			if err != nil {
				a.o.Logger.Warn("list_bookie_info: no answer from a bookie", "bookie", id, "err", err)
				return
			}
			infos[i] = info{true, free, total}
		})
	}
	wg.Wait()
	var out obj
	var sumFree, sum int64
	for i, id := range ids {
		in := infos[i]
		if !in.ok {
			continue
		}
		out = append(out, field{string(id), ": {Free: " + readableBytes(in.free) + ", Total: " +
			readableBytes(in.total) + "},"})
		sumFree += in.free
		sum += in.total
	}
	if len(out) == 0 {
		text(w, http.StatusNotFound, "Not found any Bookie info.")
		return
	}
	out = hashMap(out)
	out = append(out, field{"ClusterInfo: ", "{Free: " + readableBytes(sumFree) + ", Total: " + readableBytes(sum) + "}"})
	jsonBody(w, out)
}

// bookieInfo asks one bookie for its free and total disk bytes.
func (a *api) bookieInfo(ctx context.Context, id ledger.BookieID) (free, total int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, bookieInfoTimeout)
	defer cancel()
	addr, err := a.o.Metadata.BookieAddress(ctx, id)
	if err != nil {
		return 0, 0, err
	}
	c, err := bookierpc.DialWith(ctx, addr, bookierpc.Options{TLS: a.o.BookieTLS})
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	total, free, err = c.BookieInfo(ctx)
	return free, total, err
}

// readableBytes prints n as BookKeeper's list_bookie_info does: the number,
// then from 1000 up its size in KB, MB, GB or TB (powers of 1000) with at
// most three decimals, cut rather than rounded: 1234567 -> 1234567(1.234MB).
func readableBytes(n int64) string {
	units := []string{"", "KB", "MB", "GB", "TB"}
	d, u := float64(n), 0
	for d >= 1000 && u < len(units)-1 {
		d /= 1000
		u++
	}
	s := strconv.FormatInt(n, 10)
	if u == 0 {
		return s
	}
	num := strconv.FormatFloat(math.Floor(d*1000)/1000, 'f', 3, 64)
	num = strings.TrimRight(strings.TrimRight(num, "0"), ".")
	return s + "(" + num + units[u] + ")"
}

// Bounds of the sanity test: BookKeeper's (10 entries; one test at a time,
// a request waiting up to 5 s for the one running).
const (
	sanityEntries = 10
	sanityWait    = 5 * time.Second
)

// sanity is GET /api/v1/bookie/sanity: BookKeeper's sanity test, run
// through this bookie alone: {"passed": bool, "readOnly": bool}. readOnly
// is true only under forceReadOnlyBookie, which keeper does not have.
func (a *api) sanity(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, "Only support GET method to retrieve bookie sanity state.", http.MethodGet) {
		return
	}
	if a.o.Ledgers == nil {
		text(w, http.StatusInternalServerError, "The bookie runs without a ledger client")
		return
	}
	t := time.NewTimer(sanityWait)
	defer t.Stop()
	select {
	case a.sanityRun <- struct{}{}:
		defer func() { <-a.sanityRun }()
	case <-t.C:
		text(w, http.StatusInternalServerError, "Timing out due to max number of sanity request are running concurrently")
		return
	case <-r.Context().Done():
		return
	}
	ctx, cancel := mdContext(r)
	defer cancel()
	err := a.o.Ledgers.SanityTest(ctx, ledger.BookieID(a.o.Bookie.ID()), sanityEntries)
	if err != nil {
		a.o.Logger.Warn("bookie sanity test failed", "err", err)
	}
	jsonBody(w, obj{{"passed", err == nil}, {"readOnly", false}})
}
