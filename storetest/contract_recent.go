package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stak/inbox/driver"
)

// recentKeys returns a user partition's recent receipts, sorted, as
// "<group>/<id>".
func (e *env) recentKeys(p driver.Partition) []string {
	e.t.Helper()
	var out []string
	for _, k := range e.stats(p, e.clock.Now()).Recent {
		if k.Partition.Tenant != p.Tenant || k.Partition.Inbox != p.Inbox || !k.Partition.IsShared() {
			e.t.Errorf("recent receipt of %s in %s's stats", k.Partition.PK(), p.PK())
		}
		out = append(out, k.Partition.Group+"/"+k.ID)
	}
	slices.Sort(out)
	return out
}

// testRecentReceipts: a mark that creates a receipt records its broadcast
// in the user's Stats.Recent, atomically with it; a mark that changes an
// existing receipt records nothing; a receipt created two slots later
// clears the slot of the first; a Repair reset keeps them.
func testRecentReceipts(e *env) {
	annP, bobP, pubP := e.part("ann"), e.part("bob"), e.pub()
	group := groupOf(e.scope, "admins")
	b := e.message(pubP, "news", 3*time.Hour)
	g := e.message(group, "", 3*time.Hour)
	e.put(b)
	e.put(g)
	e.markReceipt(annP, b)
	e.markReceipt(annP, g)
	first, _ := driver.RecentSlots(e.clock.Now())
	want := []string{"$public/" + b.Message.ID, "admins/" + g.Message.ID}
	slices.Sort(want)
	if got := e.recentKeys(annP); !slices.Equal(got, want) {
		e.t.Errorf("Stats.Recent after two receipts: %v, want %v", got, want)
	}
	if got := e.recentKeys(bobP); len(got) != 0 {
		e.t.Errorf("Stats.Recent of a user without receipts: %v", got)
	}
	if got := e.recentKeys(pubP); len(got) != 0 {
		e.t.Errorf("Stats.Recent of a shared partition: %v", got)
	}

	// A receipt of a broadcast older than RecentSlotWidth is not recorded:
	// every snapshot holds it.
	old := e.message(pubP, "news", 3*time.Hour)
	e.put(old)
	e.clock.Advance(driver.RecentSlotWidth)
	e.markReceipt(bobP, old)
	if got := e.recentKeys(bobP); len(got) != 0 {
		e.t.Errorf("Stats.Recent after a receipt of an old broadcast: %v, want none", got)
	}

	// A failed mark records nothing.
	missing := e.message(pubP, "news", 3*time.Hour)
	now := e.clock.Now()
	if err := e.store.Mark(e.ctx, []driver.Mark{receiptMark(bobP, missing, now, now)}, readDelta(bobP, missing)); !errors.Is(err, driver.ErrNotFound) {
		e.t.Errorf("receipt of a missing broadcast: %v, want ErrNotFound", err)
	}
	if got := e.recentKeys(bobP); len(got) != 0 {
		e.t.Errorf("Stats.Recent after a failed mark: %v", got)
	}

	// Two slots later, a new receipt clears the first slot.
	for {
		if _, clear := driver.RecentSlots(e.clock.Now()); clear == first {
			break
		}
		e.clock.Advance(driver.RecentSlotWidth)
	}
	later := e.message(pubP, "", 3*time.Hour)
	e.put(later)
	e.markReceipt(annP, later)
	if got, want := e.recentKeys(annP), []string{"$public/" + later.Message.ID}; !slices.Equal(got, want) {
		e.t.Errorf("Stats.Recent two slots later: %v, want %v", got, want)
	}

	// A reset keeps them.
	st := e.stats(annP, e.clock.Now())
	reset := driver.Repair{Reset: true, Version: st.Version, Before: st.Counters, Counters: st.Counters, Recent: st.Recent, Now: e.clock.Now()}
	if err := e.store.Repair(e.ctx, annP, reset); err != nil {
		e.t.Fatalf("Repair: %v", err)
	}
	if got, want := e.recentKeys(annP), []string{"$public/" + later.Message.ID}; !slices.Equal(got, want) {
		e.t.Errorf("Stats.Recent after a reset: %v, want %v", got, want)
	}
}

// testMarkAdoptedMeanwhile: a direct mark made for a message without a
// ledger entry (another program's) finds it adopted by a Repair, with
// another entry: ErrStateChanged, so the Inbox reads it again, not
// ErrNotFound.
func testMarkAdoptedMeanwhile(e *env) {
	annP := e.part("ann")
	d := e.message(annP, "billing", time.Hour)
	e.put(d)
	now := e.clock.Now()
	mk := directMark(d, now, now)
	mk.Entry = driver.LedgerSK(d.Message.ExpiresAt, d.Message.ID, "mark")
	err := e.markFenced(mk.Key.Partition, []driver.Mark{mk}, delta(annP, "billing", 0, 1))
	if !errors.Is(err, driver.ErrStateChanged) {
		e.t.Errorf("mark of a message with another ledger entry: %v, want ErrStateChanged", err)
	}
	if strings.Contains(err.Error(), "not found") {
		e.t.Errorf("error %q says not found", err)
	}
	e.wantRecords("the message after the failed mark", []driver.Record{d}, e.get(d.Key()))
}

// testQueryUnseen: a Query with Unseen evaluates, in a user's partition,
// only the unread, unarchived direct messages and the receipts, newest
// first, pages by Limit, reports the counter version on its first page,
// and is refused with other filters or in a shared partition.
func testQueryUnseen(e *env) {
	annP := e.part("ann")
	read := e.message(annP, "", time.Hour)
	e.put(read)
	b := e.message(e.pub(), "", time.Hour)
	e.put(b)
	unread := e.message(annP, "", time.Hour)
	e.put(unread)
	e.markReceipt(annP, b)
	now := e.clock.Now()
	if err := e.store.Mark(e.ctx, []driver.Mark{directMark(read, now, now)}, delta(annP, "", 0, 1)); err != nil {
		e.t.Fatalf("MarkRead: %v", err)
	}
	st := e.stats(annP, now)
	q := driver.Query{Partition: annP, Unseen: true, Limit: 1, Now: now}
	var got []string
	for page := 0; ; page++ {
		res, err := e.store.Query(e.ctx, q)
		if err != nil {
			e.t.Fatalf("Query(Unseen): %v", err)
		}
		if page == 0 && res.Versioned && res.Version != st.Version {
			e.t.Errorf("first unseen page: version %d, want the stats' %d", res.Version, st.Version)
		}
		for _, r := range res.Records {
			got = append(got, fmt.Sprintf("%s receipt=%v", r.Message.ID, r.Receipt))
		}
		if res.Next == "" {
			break
		}
		if page > 10 {
			e.t.Fatal("Query(Unseen) pages without end")
		}
		q.Before = res.Next
	}
	want := []string{fmt.Sprintf("%s receipt=false", unread.Message.ID), fmt.Sprintf("%s receipt=true", b.Message.ID)}
	if !slices.Equal(got, want) {
		e.t.Errorf("Query(Unseen) paged by 1: %v, want %v (the read message left out)", got, want)
	}
	for name, bad := range map[string]driver.Query{
		"with a category":       {Partition: annP, Unseen: true, Limit: 1, Category: "x"},
		"with unread only":      {Partition: annP, Unseen: true, Limit: 1, UnreadOnly: true},
		"with an archive mark":  {Partition: annP, Unseen: true, Limit: 1, Archived: driver.NotArchived},
		"of a shared partition": {Partition: e.pub(), Unseen: true, Limit: 1},
	} {
		if _, err := e.store.Query(e.ctx, bad); !errors.Is(err, driver.ErrInvalidInput) {
			e.t.Errorf("Query(Unseen %s): %v, want ErrInvalidInput", name, err)
		}
	}
}
