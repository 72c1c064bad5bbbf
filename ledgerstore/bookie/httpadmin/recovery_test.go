package httpadmin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"keeper/internal/testhost"
	"keeper/ledgerstore/autorecovery"
	"keeper/ledgerstore/bookie/httpadmin"
	"keeper/ledgerstore/ledger"
	"keeper/ledgerstore/ledgerclient"
	"keeper/ledgerstore/metadata"
)

// The bookie's owner wires autorecovery's Operator in as the backend.
var _ httpadmin.Recovery = (*autorecovery.Operator)(nil)

func (w *world) send(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, w.base+path, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b.String()
}

func (w *world) expect(t *testing.T, method, path, body string, code int, want string) {
	t.Helper()
	if got, gotBody := w.send(t, method, path, body); got != code || gotBody != want {
		t.Fatalf("%s %s %s: %d %q, want %d %q", method, path, body, got, gotBody, code, want)
	}
}

// poll calls cond until it holds, failing the test after a deadline.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testhost.Scale(60 * time.Second))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, with a deadline
	}
}

func entryText(id, e int64) string { return fmt.Sprintf("entry %d/%d", id, e) }

// writeLedgers writes n closed E3/Qw2/Qa2 ledgers of five entries.
func writeLedgers(t *testing.T, ctx context.Context, c *ledgerclient.Client, n int) []int64 {
	t.Helper()
	var ids []int64
	for range n {
		w, err := c.Create(ctx, ledgerclient.CreateOptions{Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, Password: []byte("pw")})
		if err != nil {
			t.Fatal(err)
		}
		for e := range int64(5) {
			if _, err := w.Append(ctx, []byte(entryText(w.ID(), e))); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, w.ID())
	}
	return ids
}

// TestBookieHTTPAutorecovery walks the autorecovery endpoints against real
// bookies: delay, auditor, trigger_audit marking a lost bookie's ledgers,
// the listing with its filters, the status switch, recovering one lost
// bookie and decommissioning another, which deletes its cookie.
func TestBookieHTTPAutorecovery(t *testing.T) {
	w := newWorldN(t, 4)
	ctx, cancel := context.WithTimeout(t.Context(), testhost.Scale(120*time.Second))
	defer cancel()
	c, err := ledgerclient.New(ledgerclient.Config{ZKServers: []string{w.c.ZKAddr()},
		ZKSessionTimeout: testhost.Scale(10 * time.Second), Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ids := writeLedgers(t, ctx, c, 6)

	const ar = "/api/v1/autorecovery/"
	w.expect(t, "GET", ar+"list_under_replicated_ledger", "", 404, "No under replicated ledgers found")
	w.expect(t, "GET", ar+"who_is_auditor", "", 404, "No auditor elected")
	if code, body := w.send(t, "GET", ar+"lost_bookie_recovery_delay", ""); code != 404 ||
		!strings.HasPrefix(body, "Exception when get lostBookieRecoveryDelay.") {
		t.Fatalf("delay before any is stored: %d %q", code, body)
	}
	w.expect(t, "PUT", ar+"lost_bookie_recovery_delay", `{"delay_seconds": 3600}`, 200,
		"Success set lostBookieRecoveryDelay to 3600")
	w.expect(t, "GET", ar+"lost_bookie_recovery_delay", "", 200, "lostBookieRecoveryDelay value: 3600")
	w.expect(t, "PUT", ar+"trigger_audit", "", 404, "Exception when do operation."+autorecovery.ErrNoAuditor.Error())
	w.expect(t, "GET", ar+"status", "", 200, "{\n  \"enabled\" : true\n}")
	w.expect(t, "PUT", ar+"status?enabled=false", "", 200, "{\n  \"enabled\" : false\n}")
	w.expect(t, "PUT", ar+"trigger_audit", "", 404, "Exception when do operation."+autorecovery.ErrReplicationDisabled.Error())
	w.expect(t, "PUT", ar+"status?enabled=true", "", 200, "{\n  \"enabled\" : true\n}")

	// An auditor, on a session of its own, with the hour's delay.
	sess, err := metadata.Dial(ctx, metadata.DialConfig{Servers: []string{w.c.ZKAddr()},
		SessionTimeout: testhost.Scale(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	st, err := sess.NewStore(metadata.Config{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := autorecovery.Start(ctx, autorecovery.Config{Store: st, ID: "auditor-7", NoWorker: true,
		LostBookieRecoveryDelay: time.Hour, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	poll(t, "the auditor", func() bool {
		code, body := w.send(t, "GET", ar+"who_is_auditor", "")
		return code == 200 && body == "Auditor: auditor-7"
	})

	// A bookie is lost: nothing is marked within the hour, until
	// trigger_audit.
	victim := ledger.BookieID(w.c.Bookies[0].ID())
	on, err := autorecovery.LedgersOn(ctx, st, victim)
	if err != nil || len(on) == 0 {
		t.Fatalf("ledgers on %s: %v %v", victim, on, err)
	}
	w.c.Stop(0)
	poll(t, "the victim unregistered", func() bool {
		reg, err := st.Bookies(ctx)
		return err == nil && !slices.Contains(reg.Writable, victim)
	})
	w.expect(t, "GET", ar+"list_under_replicated_ledger", "", 404, "No under replicated ledgers found")
	w.expect(t, "PUT", ar+"trigger_audit", "", 200, "Success trigger audit.")
	list := make([]string, len(on))
	byID := make([]string, len(on))
	for i, id := range on {
		list[i] = strconv.FormatInt(id, 10)
		byID[i] = fmt.Sprintf("  %q : [ %q ]", list[i], victim)
	}
	wantList := "[ " + strings.Join(list, ", ") + " ]"
	poll(t, "the lost bookie's ledgers marked", func() bool {
		code, body := w.send(t, "GET", ar+"list_under_replicated_ledger", "")
		return code == 200 && body == wantList
	})
	wantByID := "{\n" + strings.Join(byID, ",\n") + "\n}"
	for _, q := range []string{"?printmissingreplica", "?printmissingreplica&missingreplica=" + string(victim),
		"?printmissingreplica&excludingmissingreplica=other:1"} {
		w.expect(t, "GET", ar+"list_under_replicated_ledger"+q, "", 200, wantByID)
	}
	w.expect(t, "GET", ar+"list_under_replicated_ledger?excludingmissingreplica="+string(victim), "", 404,
		"No under replicated ledgers found")
	w.expect(t, "GET", ar+"list_under_replicated_ledger?missingreplica=other:1", "", 404,
		"No under replicated ledgers found")

	// A running bookie is refused; the lost one is recovered.
	running := w.c.Bookies[1].ID()
	if code, body := w.send(t, "PUT", ar+"bookie", `{"bookie_src": ["`+running+`"]}`); code != 400 ||
		!strings.Contains(body, "stop it first") {
		t.Fatalf("recovering a running bookie: %d %q", code, body)
	}
	w.expect(t, "PUT", ar+"bookie", `{"bookie_src": ["`+string(victim)+`"], "delete_cookie": false}`, 200,
		"Success send recovery request command.")
	poll(t, "the victim recovered", func() bool {
		left, err := autorecovery.LedgersOn(ctx, st, victim)
		code, _ := w.send(t, "GET", ar+"list_under_replicated_ledger", "")
		return err == nil && len(left) == 0 && code == 404
	})
	if _, _, err := st.Cookie(ctx, victim); err != nil {
		t.Fatalf("the recovered bookie's cookie: %v", err)
	}

	// Decommission a second one, cookie and all.
	retired := ledger.BookieID(w.c.Bookies[1].ID())
	w.c.Stop(1)
	poll(t, "the retired bookie unregistered", func() bool {
		reg, err := st.Bookies(ctx)
		return err == nil && !slices.Contains(reg.Writable, retired)
	})
	poll(t, "the decommission accepted", func() bool {
		// The recovery above may still be winding down (one job at a time).
		code, body := w.send(t, "PUT", ar+"decommission", `{"bookie_src": "`+string(retired)+`", "delete_cookie": "true"}`)
		if code == 503 {
			return false
		}
		if code != 200 || body != "Success send decommission Bookie command "+string(retired) {
			t.Fatalf("decommission: %d %q", code, body)
		}
		return true
	})
	poll(t, "the retired bookie decommissioned", func() bool {
		left, err := autorecovery.LedgersOn(ctx, st, retired)
		_, _, cerr := st.Cookie(ctx, retired)
		return err == nil && len(left) == 0 && errors.Is(cerr, metadata.ErrNoCookie)
	})
	// Every entry still reads back, through the API.
	for _, id := range ids {
		code, body := w.send(t, "GET", fmt.Sprintf("/api/v1/ledger/read?ledger_id=%d", id), "")
		var got map[string]string
		if code != 200 || json.Unmarshal([]byte(body), &got) != nil || len(got) != 5 {
			t.Fatalf("read ledger %d: %d %q", id, code, body)
		}
		for e := range int64(5) {
			if got[strconv.FormatInt(e, 10)] != entryText(id, e) {
				t.Fatalf("ledger %d entry %d: %q", id, e, got[strconv.FormatInt(e, 10)])
			}
		}
	}
}

// TestBookieHTTPLedgerReadDelete: /api/v1/ledger/read prints entries as
// BookKeeper does (payload as text, Java's HashMap order, a page's
// marker), and /api/v1/ledger/delete deletes the ledger.
func TestBookieHTTPLedgerReadDelete(t *testing.T) {
	w := newWorldN(t, 2)
	ctx, cancel := context.WithTimeout(t.Context(), testhost.Scale(60*time.Second))
	defer cancel()
	c, err := ledgerclient.New(ledgerclient.Config{ZKServers: []string{w.c.ZKAddr()},
		ZKSessionTimeout: testhost.Scale(10 * time.Second), Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := writeLedgers(t, ctx, c, 1)[0]
	path := fmt.Sprintf("/api/v1/ledger/read?ledger_id=%d", id)
	var rows []string
	for e := range int64(5) {
		rows = append(rows, fmt.Sprintf("  %q : %q", strconv.FormatInt(e, 10), entryText(id, e)))
	}
	// One-digit keys hash to buckets 0..9 of Java's table: in order.
	w.expect(t, "GET", path, "", 200, "{\n"+strings.Join(rows, ",\n")+"\n}")
	w.expect(t, "GET", path+"&start_entry_id=3", "", 200, "{\n"+strings.Join(rows[3:], ",\n")+"\n}")
	w.expect(t, "GET", path+"&start_entry_id=1&end_entry_id=2", "", 200, "{\n"+strings.Join(rows[1:3], ",\n")+"\n}")
	w.expect(t, "GET", path+"&page=2", "", 200, "{\n  \"Entries for page: \" : \"2\"\n}")
	code, body := w.send(t, "GET", path+"&page=1", "")
	var page map[string]string
	if code != 200 || json.Unmarshal([]byte(body), &page) != nil || len(page) != 6 || page["Entries for page: "] != "1" {
		t.Fatalf("page 1: %d %q", code, body)
	}
	w.expect(t, "GET", "/api/v1/ledger/read?ledger_id=12345", "", 404, "Ledger 12345 does not exist")
	del := fmt.Sprintf("/api/v1/ledger/delete?ledger_id=%d", id)
	w.expect(t, "DELETE", del, "", 200, fmt.Sprintf("\"Deleted ledger: %d\"", id))
	w.expect(t, "DELETE", del, "", 404, fmt.Sprintf("Ledger %d does not exist", id))
	if ok, err := w.store.Exists(ctx, id); ok || err != nil {
		t.Fatalf("ledger %d after delete: exists %v, %v", id, ok, err)
	}
}
