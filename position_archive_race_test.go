package inbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// moveBeforeMark runs f once, right before the first mark of message id
// that archives it reaches the Store: a read position moved between the
// archive's reads and its write.
type moveBeforeMark struct {
	inbox.Store
	id   string
	once sync.Once
	f    func()
}

func (s *moveBeforeMark) Mark(ctx context.Context, marks []driver.Mark, deltas []driver.Counter) error {
	for _, mk := range marks {
		if mk.Key.ID == s.id && !mk.To.ArchivedAt.IsZero() {
			s.once.Do(s.f)
		}
	}
	return s.Store.Mark(ctx, marks, deltas)
}

// TestRVArchiveRacingPosition: an Archive of a message of a one-to-one
// chat reads it unread, then MarkAllRead of the chat moves her read
// position over it (and counts it among those it marked read), then the
// archive's write lands. As MarkAllRead's rules say, a position and
// per-message marks combine as if the position's read had been written
// on each message it covers when it moved, and an archive of a covered
// message writes its read explicitly: the message is archived and read.
// With the read written on the message, the archive's write (conditional
// on the marks it read) would have failed and read it again.
func TestRVArchiveRacingPosition(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	for _, call := range []string{"Archive", "ArchiveAll"} {
		t.Run(call, func(t *testing.T) {
			mem, other, ann, ids := chatOfThree(t, clock)
			now = now.Add(time.Second)
			marked := -1
			st := &moveBeforeMark{Store: mem, id: ids[0], f: func() {
				n, err := other.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "chat"})
				if err != nil {
					t.Errorf("MarkAllRead = %v", err)
				}
				marked = n
			}}
			ib := inbox.New(st, inbox.WithClock(clock))
			switch call {
			case "Archive":
				if ok, err := ib.Archive(ctx, ann, ids[0]); err != nil || !ok {
					t.Fatalf("Archive = %v, %v", ok, err)
				}
			default:
				if n, err := ib.ArchiveAll(ctx, ann, inbox.ListOptions{Thread: "chat", UpTo: ids[0]}); err != nil || n != 1 {
					t.Fatalf("ArchiveAll = %d, %v; want 1", n, err)
				}
			}
			if marked != 3 {
				t.Fatalf("MarkAllRead between the archive's read and its write marked %d; want 3 (the position covers all three)", marked)
			}
			m, err := other.Get(ctx, ann, ids[0])
			if err != nil {
				t.Fatal(err)
			}
			if !m.IsArchived() || !m.IsRead() {
				t.Errorf("after MarkAllRead covered %s (and counted it) and %s archived it: archived %v, read %v; want archived and read (the archive of a covered message writes its read)", ids[0], call, m.IsArchived(), m.IsRead())
			}
			if _, err := mem.DeliverChanges(ctx, other.HandleChange); err != nil {
				t.Fatal(err)
			}
			if m, err = other.Get(ctx, ann, ids[0]); err != nil || !m.IsRead() {
				t.Errorf("after the write-out: read %v, %v; want read", m.IsRead(), err)
			}
		})
	}
}
