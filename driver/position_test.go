package driver_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stak/inbox/driver"
)

// idAt returns a message ID of second sec.
func idAt(sec int64) string {
	return ulid.MustNew(uint64(time.Unix(sec, 0).UnixMilli()), zeroReader{}).String()
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestPositionSteps: a position moved up keeps each move's time, so that
// a message reads as read when the move that covered it was made.
func TestPositionSteps(t *testing.T) {
	t0, t1, t2 := time.Unix(1000, 0).UTC(), time.Unix(2000, 0).UTC(), time.Unix(3000, 0).UTC()
	p := driver.Position{}.Raised(idAt(100), t0).Raised(idAt(200), t1).Raised(idAt(300), t2)
	steps, ok := p.Steps()
	if !ok || len(steps) != 3 {
		t.Fatalf("Steps() = %v, %v; want 3 moves", steps, ok)
	}
	for _, c := range []struct {
		id     int64
		covers bool
		at     time.Time
	}{{50, true, t0}, {150, true, t1}, {250, true, t2}, {300, false, t2}, {350, false, t2}} {
		id := idAt(c.id)
		if p.Covers(id) != c.covers {
			t.Errorf("Covers(second %d) = %v, want %v", c.id, !c.covers, c.covers)
		}
		if c.covers && !p.ReadAt(id).Equal(c.at) {
			t.Errorf("ReadAt(second %d) = %v, want %v", c.id, p.ReadAt(id), c.at)
		}
	}
	// Another program's long value is no steps, read without being split:
	// every record the position covers reads as read at its time.
	long := driver.Position{Bound: p.Bound, At: t2, Earlier: strings.Repeat(";", 1<<20)}
	if _, ok := long.Steps(); ok || !long.ReadAt(idAt(50)).Equal(t2) {
		t.Errorf("a position of a 1 MiB Earlier: Steps ok %v, ReadAt %v; want not ok, %v", ok, long.ReadAt(idAt(50)), t2)
	}
	id := idAt(50)
	if testing.AllocsPerRun(10, func() { long.ReadAt(id) }) > 0 {
		t.Errorf("ReadAt of a 1 MiB Earlier allocates: it splits the value")
	}
	if !p.Equal(p) || p.Equal(driver.Position{}.Raised(idAt(300), t2)) || p.IsZero() || !(driver.Position{}).IsZero() {
		t.Errorf("Equal or IsZero wrong for %+v", p)
	}
}

// TestPositionValidation: a Store keeps no position that is not one, and
// no covered counter off a user's own thread or a group's.
func TestPositionValidation(t *testing.T) {
	user := driver.Partition{Tenant: "t", Inbox: "i", User: "ann"}
	good := driver.Position{}.Raised(idAt(100), time.Unix(1000, 0))
	for _, c := range []struct {
		what string
		c    driver.Counter
		ok   bool
	}{
		{"a position", driver.Counter{Partition: user, Thread: "chat", Covered: true, Position: good, Unread: 3}, true},
		{"a change of a record", driver.Counter{Partition: user, Thread: "chat", Covered: true, Of: idAt(50), Unread: -1}, true},
		{"a change of no record", driver.Counter{Partition: user, Thread: "chat", Covered: true, Of: "x", Unread: -1}, false},
		{"a position of a category", driver.Counter{Partition: user, Category: "c", Thread: "chat", Covered: true, Position: good}, false},
		{"a bound that is no ID", driver.Counter{Partition: user, Thread: "chat", Covered: true, Position: driver.Position{Bound: "x", At: time.Unix(1, 0)}}, false},
		{"no time", driver.Counter{Partition: user, Thread: "chat", Covered: true, Position: driver.Position{Bound: idAt(1)}}, false},
		{"steps out of order", driver.Counter{Partition: user, Thread: "chat", Covered: true, Position: driver.Position{Bound: idAt(10), At: time.Unix(1, 0), Earlier: idAt(20) + ":5"}}, false},
		{"too many steps", driver.Counter{Partition: user, Thread: "chat", Covered: true, Position: good.Raised(idAt(200), time.Unix(2, 0)).Raised(idAt(300), time.Unix(3, 0)).Raised(idAt(400), time.Unix(4, 0)).Raised(idAt(500), time.Unix(5, 0))}, false},
		{"a long earlier", driver.Counter{Partition: user, Thread: "chat", Covered: true, Position: driver.Position{Bound: idAt(10), At: time.Unix(1, 0), Earlier: strings.Repeat(idAt(5)+":5;", 1000) + idAt(5) + ":5"}}, false},
		{"tallies besides unread", driver.Counter{Partition: user, Thread: "chat", Covered: true, Read: 1}, false},
		{"a shared partition's", driver.Counter{Partition: driver.Partition{Tenant: "t", Inbox: "i", Group: "g"}, Thread: "chat", Covered: true}, false},
		{"a group's thread's", driver.Counter{Partition: user, Group: "g", Thread: "chat", Covered: true, Position: good, Unread: -2}, true},
		{"everyone's thread's", driver.Counter{Partition: user, Group: driver.PublicGroup, Thread: "chat", Covered: true}, false},
		{"a group that is no key", driver.Counter{Partition: user, Group: "g#h", Thread: "chat", Covered: true}, false},
		{"no thread", driver.Counter{Partition: user, Covered: true}, false},
		{"a record off a covered counter", driver.Counter{Partition: user, Of: idAt(1)}, false},
	} {
		err := driver.ValidateCounter(c.c)
		if (err == nil) != c.ok || err != nil && !errors.Is(err, driver.ErrInvalidInput) {
			t.Errorf("ValidateCounter(%s) = %v, want ok %v", c.what, err, c.ok)
		}
	}
}

// TestOverlay: a position reads as read the direct messages of its
// thread below it that its counters count: unread, not archived, in the
// user's partition.
func TestOverlay(t *testing.T) {
	user := driver.Partition{Tenant: "t", Inbox: "i", User: "ann"}
	at := time.Unix(5000, 0).UTC()
	positions := map[string]driver.Position{"chat": driver.Position{}.Raised(idAt(200), at)}
	rec := func(sec int64, thread string) driver.Record {
		r := driver.Record{Partition: user, Entry: driver.NewLedgerSK(time.Unix(9000, 0), idAt(sec)), Message: driver.Message{ID: idAt(sec), Thread: thread, ExpiresAt: time.Unix(9000, 0)}}
		r.Counted = r.State().Counted()
		return r
	}
	below := rec(100, "chat")
	if got := driver.Overlay(below, positions); !got.Message.ReadAt.Equal(at) || got.Counted&driver.MarkedRead == 0 {
		t.Errorf("Overlay(an unread message below) = read at %v, counted %04b; want read at %v", got.Message.ReadAt, got.Counted, at)
	}
	for what, r := range map[string]driver.Record{
		"above":     rec(300, "chat"),
		"another":   rec(100, "other"),
		"no thread": rec(100, ""),
		"archived": func() driver.Record {
			r := rec(100, "chat")
			r.Message.ArchivedAt = at
			r.Counted = r.State().Counted()
			return r
		}(),
		"a receipt":    func() driver.Record { r := rec(100, "chat"); r.Receipt = true; return r }(),
		"not ledgered": func() driver.Record { r := rec(100, "chat"); r.Entry = ""; return r }(),
	} {
		if got := driver.Overlay(r, positions); !got.Message.ReadAt.IsZero() {
			t.Errorf("Overlay(%s) reads it read at %v, want unread", what, got.Message.ReadAt)
		}
	}
}

// FuzzPositionSteps: the steps of a position another program wrote
// (anything) parse or fail, never panic, and parse only ascending bounds
// that are message IDs below the position's.
func FuzzPositionSteps(f *testing.F) {
	f.Add(idAt(100), idAt(50)+":1000")
	f.Add(idAt(100), idAt(50)+":1000;"+idAt(60)+":2000")
	f.Add(idAt(100), ":;:")
	f.Add(idAt(100), idAt(150)+":1")
	f.Add("", "x:-1")
	f.Fuzz(func(t *testing.T, bound, earlier string) {
		p := driver.Position{Bound: bound, At: time.Unix(1, 0), Earlier: earlier}
		steps, ok := p.Steps()
		if !ok {
			return
		}
		for i, st := range steps[:len(steps)-1] {
			if driver.ValidateMessageID(st.Bound) != nil || st.Bound >= steps[i+1].Bound {
				t.Fatalf("Steps(%q, %q) = %v: not ascending IDs", bound, earlier, steps)
			}
		}
		_ = p.ReadAt(bound)
	})
}
