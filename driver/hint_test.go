package driver_test

import (
	"testing"
	"time"

	"github.com/stak/inbox/driver"
)

// TestRemovalDeltasForeignReceiptNoHint: the removal of a receipt another
// program wrote (no ledger entry), one of a thread's message that it
// marked deleted and read (whose counters count it otherwise: see
// driver.EditDeltas), changes no receipts' hint: the hint never counted
// it, and a removal never raises one.
func TestRemovalDeltasForeignReceiptNoHint(t *testing.T) {
	now := time.Unix(1_800_000_000, 0).UTC()
	p := driver.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	rec := driver.Record{Partition: p, Receipt: true, DeletedAt: now, Message: driver.Message{
		ID: "01ARZ3NDEKTSV4RRFFQ69G5FAV", Thread: "team", ReadAt: now, ExpiresAt: now.Add(time.Hour), Audience: driver.Audience{Group: "admins"},
	}}
	for _, d := range driver.RemovalDeltas(rec) {
		if d.Latest != "" || !d.Top.IsZero() || d.TopEntry != "" {
			t.Errorf("RemovalDeltas changes counter %s's receipts' hint: Latest %q, Top %+v, TopEntry %q", d.SK(), d.Latest, d.Top, d.TopEntry)
		}
	}
}
