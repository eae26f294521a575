package dynamo_test

import (
	"context"
	"crypto/rand"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/oklog/ulid/v2"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// withHostilePosition returns an Inbox over a fresh table on DynamoDB
// Local where ann has one message of her chat with bob, and on her c#* a
// read position over it (covering it, counted unread in its category
// "chat") whose map holds hostile's attributes in place of a valid one's;
// with the Store, the message's ID and the position's bound.
func withHostilePosition(t *testing.T, hostile map[string]types.AttributeValue) (*dynamo.Store, *inbox.Inbox, inbox.User, string, string) {
	t.Helper()
	store, c, table := newLocalStore(t)
	ib := inbox.New(store)
	ann := inbox.Scope{Tenant: "acme", Inbox: "alerts"}.User("ann")
	id := chatTo(t, ib, ann, "bob", 1)[0]
	bound := ulid.MustNew(ulid.Timestamp(ulid.Time(ulid.MustParse(id).Time()).Add(time.Second)), rand.Reader).String()
	m := map[string]types.AttributeValue{
		"b": &types.AttributeValueMemberS{Value: bound}, "t": num(time.Now().Unix()), "u": num(1), "a": num(1),
		"uY2hhdA": num(1), "aY2hhdA": num(1), // category "chat"
	}
	maps.Copy(m, hostile)
	setNamed(t, c, table, ann.Partition(), driver.CounterSK("", ""), "cv#Ym9i", &types.AttributeValueMemberM{Value: m})
	return store, ib, ann, id, bound
}

// TestRVCoveredHostileTime: a read position whose time (t) is one no
// time attribute holds (before 1970, after 9999) is another program's
// hostile attribute like the others TestCoveredHostile lists: Counts is
// ErrInvalidInput. Kept, the position reads its messages read at that
// time, and its write-out writes a readat the Store reads back as none:
// the messages come back unread while the counters count them read.
func TestRVCoveredHostileTime(t *testing.T) {
	t.Parallel()
	ddblocal.Endpoint(t)
	ctx := context.Background()
	for _, at := range []int64{-100, driver.MaxEpoch + 1} {
		_, ib, ann, _, bound := withHostilePosition(t, map[string]types.AttributeValue{"t": num(at)})
		_, err := ib.Counts(ctx, ann)
		if errors.Is(err, driver.ErrInvalidInput) {
			continue // refused, as any other hostile position
		}
		t.Errorf("Counts with a position at epoch second %d = %v, want ErrInvalidInput", at, err)
		// What follows from keeping it: the stream handler writes it out.
		pos := driver.Position{Bound: bound, At: time.Unix(at, 0).UTC()}
		if err := ib.HandleChange(ctx, driver.Change{ID: "x", Op: driver.ChangeInsert, Position: &pos, PositionOf: ann.Partition(), PositionThread: "bob"}); err != nil {
			t.Logf("HandleChange (write-out): %v", err)
			continue
		}
		cnt, err := ib.Counts(ctx, ann)
		page, lerr := ib.List(ctx, ann, inbox.ListOptions{})
		if err != nil || lerr != nil || len(page.Messages) != 1 {
			t.Fatalf("Counts %v, List %v %v", err, page, lerr)
		}
		if read := page.Messages[0].IsRead(); read != (cnt.Unread == 0) {
			t.Errorf("after the write-out of a position at epoch second %d: Counts.Unread %d, List shows the message read %v (ReadAt %v)", at, cnt.Unread, read, page.Messages[0].ReadAt)
		}
	}
}

// TestRVCoveredHostileDone: a read position whose w (its Done) is one no
// time attribute holds, or not a number, is another program's hostile
// attribute: Counts is ErrInvalidInput, and MarkAllRead of the chat
// writes nothing.
func TestRVCoveredHostileDone(t *testing.T) {
	t.Parallel()
	ddblocal.Endpoint(t)
	ctx := context.Background()
	for _, w := range []types.AttributeValue{num(-100), num(driver.MaxEpoch + 1), &types.AttributeValueMemberS{Value: "soon"}, &types.AttributeValueMemberBOOL{Value: true}} {
		store, ib, ann, id, _ := withHostilePosition(t, map[string]types.AttributeValue{"w": w})
		ids := []string{id}
		if _, err := ib.Counts(ctx, ann); !errors.Is(err, driver.ErrInvalidInput) {
			t.Errorf("Counts with a position whose w is %#v = %v, want ErrInvalidInput", w, err)
		}
		before, err := store.GetRecords(ctx, []driver.Key{{Partition: ann.Partition(), ID: ids[0]}})
		if err != nil || len(before) != 1 {
			t.Fatalf("GetRecords: %v, %v", before, err)
		}
		if _, err := ib.MarkAllRead(ctx, ann, inbox.ListOptions{Thread: "bob"}); !errors.Is(err, driver.ErrInvalidInput) {
			t.Errorf("MarkAllRead of the chat with a position whose w is %#v = %v, want ErrInvalidInput", w, err)
		}
		after, err := store.GetRecords(ctx, []driver.Key{{Partition: ann.Partition(), ID: ids[0]}})
		if err != nil || len(after) != 1 || !after[0].Message.ReadAt.Equal(before[0].Message.ReadAt) {
			t.Errorf("after MarkAllRead, the message = %+v, %v; want it as before", after, err)
		}
	}
}
