package storetest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/memstore"
	"github.com/stak/inbox/storetest"
)

// A mutant is a memstore wrapped to break one rule of the Store contract.
// The suite must fail on each, in the subtests named.
type mutant struct {
	wrap     func(inbox.Store) inbox.Store
	late     bool     // wrap a memstore that never deletes expired records
	lag      bool     // wrap a memstore whose removals wait for the suite (a Harness)
	property bool     // run RunProperty rather than Run
	wantFail []string // subtests of Run that must fail (only these run)
	wantOut  string   // what RunProperty's output must say
}

// mutantEnv names the mutant a child test process runs the suite on.
const mutantEnv = "STORETEST_MUTANT"

func mutants() map[string]mutant {
	return map[string]mutant{
		"MarkReadCountsTwice": {
			wrap:     func(s inbox.Store) inbox.Store { return countTwice{s} },
			wantFail: []string{"Store/MarkReadDirect", "Inbox/MarkRead", "Inbox/Counts", "Concurrency/MarkReadDirect"},
		},
		"MarkReadNotAtomic": {
			wrap:     func(s inbox.Store) inbox.Store { return notAtomic{s} },
			wantFail: []string{"Store/MarkReadBatchAllOrNothing"},
		},
		"PutMessageCountsRetries": {
			wrap:     func(s inbox.Store) inbox.Store { return &countRetries{Store: s} },
			wantFail: []string{"Store/PutMessageExists", "Inbox/HostSystemID"},
		},
		"QueryLimitAfterFilter": {
			wrap:     func(s inbox.Store) inbox.Store { return limitAfterFilter{s} },
			wantFail: []string{"Store/QueryLimitBeforeFilter", "Store/QueryPaging"},
		},
		"QueryIgnoresNow": {
			wrap:     func(s inbox.Store) inbox.Store { return ignoresNow{s} },
			wantFail: []string{"Store/QueryFilters", "Store/QueryPaging"},
		},
		"StatsWithoutCategories": {
			wrap:     func(s inbox.Store) inbox.Store { return totalsOnly{s} },
			wantFail: []string{"Store/Stats", "Inbox/Counts", "Inbox/Recount"},
		},
		"StatsWithoutExpired": {
			wrap:     func(s inbox.Store) inbox.Store { return noExpired{s} },
			late:     true,
			wantFail: []string{"Store/StatsExpired", "Inbox/Expiry", "Inbox/CountsThroughExpiry"},
		},
		"RemovalAppliedTwice": {
			wrap:     func(s inbox.Store) inbox.Store { return removalTwice{s} },
			lag:      true,
			wantFail: []string{"Store/ApplyRemoval"},
		},
		"TimesNotUTC": {
			wrap:     func(s inbox.Store) inbox.Store { return otherZone{s} },
			wantFail: []string{"Store/GetRecords", "RoundTrip/StoreFields"},
		},
		"ClaimHostIDForgets": {
			wrap:     func(s inbox.Store) inbox.Store { return forgetful{s} },
			wantFail: []string{"Store/ClaimHostID", "Inbox/HostSystemID"},
		},
		"ArchiveNotCounted": {
			wrap:     func(s inbox.Store) inbox.Store { return archiveUncounted{s} },
			wantFail: []string{"Inbox/Archive", "Inbox/Seen"},
		},
		"WatermarkDropped": {
			wrap:     func(s inbox.Store) inbox.Store { return watermarkDropped{s} },
			wantFail: []string{"Store/MarkWatermark", "Inbox/Seen"},
		},
		"MarkIgnoresFrom": {
			wrap:     func(s inbox.Store) inbox.Store { return ignoresFrom{s} },
			wantFail: []string{"Store/MarkStatesDirect", "Store/MarkStatesReceipt"},
		},
		"ClaimNotRetired": {
			wrap:     func(s inbox.Store) inbox.Store { return notRetired{s} },
			wantFail: []string{"Store/ClaimRetire", "Inbox/Redact"},
		},
		"ClaimHostIDForgetsProperty": {
			wrap:     func(s inbox.Store) inbox.Store { return forgetful{s} },
			property: true,
			wantOut:  "retry got ID",
		},
	}
}

// TestSuiteCatchesBrokenStores runs the suite on each mutant in a child
// process and checks that it fails where it should.
func TestSuiteCatchesBrokenStores(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per mutant")
	}
	for name, m := range mutants() {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run="+runPattern(m.wantFail), "-test.count=1")
			cmd.Env = append(os.Environ(), mutantEnv+"="+name, storetest.PropertySeedEnv+"=1")
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("the suite did not fail on a store breaking %s (err %v):\n%s", name, err, out)
			}
			for _, sub := range m.wantFail {
				if !strings.Contains(string(out), "--- FAIL: TestMutant/"+sub+" ") {
					t.Errorf("subtest %s did not fail on a store breaking %s", sub, name)
				}
			}
			if !strings.Contains(string(out), m.wantOut) {
				t.Errorf("the output does not say %q", m.wantOut)
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}

// runPattern returns the -test.run pattern that runs TestMutant's subtests
// subs (group/name), or all of it if subs is empty.
func runPattern(subs []string) string {
	if len(subs) == 0 {
		return "^TestMutant$"
	}
	var groups, names []string
	for _, s := range subs {
		g, n, _ := strings.Cut(s, "/")
		groups = append(groups, g)
		names = append(names, n)
	}
	return "^TestMutant$/^(" + strings.Join(groups, "|") + ")$/^(" + strings.Join(names, "|") + ")$"
}

// TestMutant runs the suite on the mutant named by STORETEST_MUTANT; it is
// meant to fail, and runs only as TestSuiteCatchesBrokenStores's child.
func TestMutant(t *testing.T) {
	name := os.Getenv(mutantEnv)
	if name == "" {
		t.Skip("run by TestSuiteCatchesBrokenStores")
	}
	m, ok := mutants()[name]
	if !ok {
		t.Fatalf("no mutant %q", name)
	}
	newStore := func(_ testing.TB, now func() time.Time) inbox.Store {
		switch {
		case m.late:
			return m.wrap(memstore.New(memstore.WithClock(func() time.Time { return time.Time{} })))
		case m.lag:
			ms := memstore.New(memstore.WithClock(now), memstore.WithStreamLag())
			return harnessOf{Store: m.wrap(ms), h: ms}
		}
		return m.wrap(memstore.New(memstore.WithClock(now)))
	}
	if m.property {
		storetest.RunProperty(t, newStore, 300)
		return
	}
	storetest.Run(t, newStore)
}

// countTwice applies Mark's deltas twice.
type countTwice struct{ inbox.Store }

func (s countTwice) Mark(ctx context.Context, marks []inbox.Mark, deltas []inbox.Counter) error {
	return s.Store.Mark(ctx, marks, append(slices.Clone(deltas), deltas...))
}

// notAtomic applies a batch of marks one by one, the deltas with the first.
type notAtomic struct{ inbox.Store }

func (s notAtomic) Mark(ctx context.Context, marks []inbox.Mark, deltas []inbox.Counter) error {
	var first error
	for i, mk := range marks {
		var d []inbox.Counter
		if i == 0 {
			d = deltas
		}
		if err := s.Store.Mark(ctx, []inbox.Mark{mk}, d); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// countRetries adds the deltas of a PutMessage even when the record exists.
type countRetries struct {
	inbox.Store
	n atomic.Int64
}

func (s *countRetries) PutMessage(ctx context.Context, rec inbox.Record, deltas []inbox.Counter) error {
	err := s.Store.PutMessage(ctx, rec, deltas)
	if errors.Is(err, inbox.ErrExists) {
		id := fmt.Sprintf("retry-%d", s.n.Add(1))
		// A record without an entry is accounted by event ID: a way to add
		// the deltas once more.
		ghost := inbox.Record{Partition: rec.Partition, Message: inbox.Message{ID: rec.Message.ID}}
		if _, err := s.Store.ApplyRemoval(ctx, inbox.Removal{Record: ghost, EventID: id, Deltas: deltas, Now: rec.Message.DeliveredAt}); err != nil {
			return err
		}
	}
	return err
}

// limitAfterFilter applies Limit to the records that pass the filters.
type limitAfterFilter struct{ inbox.Store }

func (s limitAfterFilter) Query(ctx context.Context, q inbox.Query) (inbox.QueryResult, error) {
	limit := q.Limit
	q.Limit = 10000
	res, err := s.Store.Query(ctx, q)
	if err != nil || len(res.Records) <= limit {
		return res, err
	}
	res.Records = res.Records[:limit]
	res.Next = res.Records[limit-1].Message.ID
	return res, nil
}

// ignoresNow returns expired records whatever Query.Now says.
type ignoresNow struct{ inbox.Store }

func (s ignoresNow) Query(ctx context.Context, q inbox.Query) (inbox.QueryResult, error) {
	q.Now = time.Time{}
	return s.Store.Query(ctx, q)
}

// totalsOnly leaves the category counters out of Stats.
type totalsOnly struct{ inbox.Store }

func (s totalsOnly) Stats(ctx context.Context, p inbox.Partition, now time.Time) (inbox.Stats, error) {
	st, err := s.Store.Stats(ctx, p, now)
	st.Counters = slices.DeleteFunc(st.Counters, func(c inbox.Counter) bool { return c.Category != "" })
	return st, err
}

// noExpired leaves the expired ledger entries out of Stats.
type noExpired struct{ inbox.Store }

func (s noExpired) Stats(ctx context.Context, p inbox.Partition, now time.Time) (inbox.Stats, error) {
	st, err := s.Store.Stats(ctx, p, now)
	if now.Year() < 3000 { // the suite's look at the whole ledger stays right
		st.Expired = nil
	}
	return st, err
}

// removalTwice applies a ledgered removal's deltas even when its entry is
// gone: a redelivered stream record counts again.
type removalTwice struct{ inbox.Store }

func (s removalTwice) ApplyRemoval(ctx context.Context, r inbox.Removal) (bool, error) {
	ok, err := s.Store.ApplyRemoval(ctx, r)
	if err == nil && !ok && r.Record.Ledgered() {
		ghost := r
		ghost.Record.Entry, ghost.Delete, ghost.EventID = "", false, fmt.Sprintf("again-%s-%d", r.Record.Message.ID, r.Now.UnixNano())
		return s.Store.ApplyRemoval(ctx, ghost)
	}
	return ok, err
}

// otherZone returns records' times in another time zone than UTC.
type otherZone struct{ inbox.Store }

func inZone(recs []inbox.Record) {
	zone := time.FixedZone("UTC+1", 3600)
	for i := range recs {
		m := &recs[i].Message
		m.ReceivedAt, m.DeliveredAt, m.ExpiresAt = m.ReceivedAt.In(zone), m.DeliveredAt.In(zone), m.ExpiresAt.In(zone)
	}
}

func (s otherZone) GetRecords(ctx context.Context, keys []inbox.Key) ([]inbox.Record, error) {
	recs, err := s.Store.GetRecords(ctx, keys)
	inZone(recs)
	return recs, err
}

func (s otherZone) Query(ctx context.Context, q inbox.Query) (inbox.QueryResult, error) {
	res, err := s.Store.Query(ctx, q)
	inZone(res.Records)
	return res, err
}

// forgetful never remembers a host system ID claim.
type forgetful struct{ inbox.Store }

func (forgetful) ClaimHostID(_ context.Context, c inbox.HostClaim) (inbox.HostClaim, error) {
	return c, nil
}

// harnessOf is a wrapped memstore that is still a storetest.Harness: the
// wrapper's Store methods, the memstore's harness methods.
type harnessOf struct {
	inbox.Store
	h *memstore.Store
}

func (s harnessOf) Delete(ctx context.Context, k inbox.Key) (bool, error) { return s.h.Delete(ctx, k) }
func (s harnessOf) Deliver(ctx context.Context) (int, error)              { return s.h.Deliver(ctx) }
func (s harnessOf) Redeliver(ctx context.Context) (int, error)            { return s.h.Redeliver(ctx) }
func (s harnessOf) Pending() int                                          { return s.h.Pending() }

// archiveUncounted drops the archive tallies of Mark's deltas.
type archiveUncounted struct{ inbox.Store }

func (s archiveUncounted) Mark(ctx context.Context, marks []inbox.Mark, deltas []inbox.Counter) error {
	out := slices.Clone(deltas)
	for i := range out {
		out[i].Archived, out[i].ArchivedRead = 0, 0
	}
	return s.Store.Mark(ctx, marks, out)
}

// watermarkDropped accepts watermark marks and writes nothing of them.
type watermarkDropped struct{ inbox.Store }

func (s watermarkDropped) Mark(ctx context.Context, marks []inbox.Mark, deltas []inbox.Counter) error {
	marks = slices.DeleteFunc(slices.Clone(marks), func(mk inbox.Mark) bool { return mk.Seen != "" })
	if len(marks) == 0 {
		return nil
	}
	return s.Store.Mark(ctx, marks, deltas)
}

// ignoresFrom applies each mark to whatever marks the record has: it reads
// the record and rewrites the mark's From from it.
type ignoresFrom struct{ inbox.Store }

func (s ignoresFrom) Mark(ctx context.Context, marks []inbox.Mark, deltas []inbox.Counter) error {
	marks = slices.Clone(marks)
	for i, mk := range marks {
		if mk.Seen != "" {
			continue
		}
		recs, err := s.GetRecords(ctx, []inbox.Key{mk.Key})
		if err != nil {
			return err
		}
		marks[i].From = inbox.State{}
		if len(recs) == 1 {
			r := recs[0]
			marks[i].From = inbox.State{ReadAt: r.Message.ReadAt, ArchivedAt: r.Message.ArchivedAt, DeletedAt: r.DeletedAt}
		}
	}
	return s.Store.Mark(ctx, marks, deltas)
}

// notRetired makes no claim retire.
type notRetired struct{ inbox.Store }

func (s notRetired) ClaimHostID(ctx context.Context, c inbox.HostClaim) (inbox.HostClaim, error) {
	if c.Retire {
		c.Retire = false
		got, err := s.Store.ClaimHostID(ctx, c)
		if got.ID == "" {
			return inbox.HostClaim{}, err
		}
		return got, err
	}
	return s.Store.ClaimHostID(ctx, c)
}
