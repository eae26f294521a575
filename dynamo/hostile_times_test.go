package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/internal/racetest"
)

// validTime reports whether number is a whole number of epoch seconds
// from 1970 to 9999, as the library writes a time.
func validTime(number string) bool {
	n, err := strconv.ParseInt(number, 10, 64)
	return err == nil && n >= 0 && n <= driver.MaxEpoch
}

// hostileAttrValues are what another program may write into a time
// attribute that holds no time (driver.ParseTimeAttr), by name.
var hostileAttrValues = []struct {
	name string
	v    types.AttributeValue
}{
	{`"x"`, &types.AttributeValueMemberS{Value: "x"}},
	{"an ISO time", &types.AttributeValueMemberS{Value: "2026-01-02T03:04:05Z"}},
	{"true", &types.AttributeValueMemberBOOL{Value: true}},
	{"NULL", &types.AttributeValueMemberNULL{Value: true}},
	{"1e30", &types.AttributeValueMemberN{Value: "1e30"}},
	{"-1e30", &types.AttributeValueMemberN{Value: "-1e30"}},
	{"milliseconds", &types.AttributeValueMemberN{Value: "1700000000000"}},
	{"-1", &types.AttributeValueMemberN{Value: "-1"}},
	{"1.5e-3", &types.AttributeValueMemberN{Value: "1.5e-3"}}, // a time (the epoch), in a numeral ParseInt refuses
	{"a fraction", &types.AttributeValueMemberN{Value: "1700000000.5"}},
	{"a list", &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberN{Value: "1700000000"}}}},
}

// TestHostileTimes: a time attribute that another program overwrote with
// what holds no time (NULL, a string, a boolean, a list, 1e30, -1e30, -1, a time in
// milliseconds), or with a numeral of a time that is no whole number
// (1.5e-3, a fraction), on another program's direct message and read
// receipt and on the library's own messages, receipts, a snoozed and a
// scheduled message, and on a broadcast, fails no Get, List, Counts,
// mark or Recount: such an attribute reads as absent (an unset mark, no
// snooze, no due time, no received time; expiredat that holds no number
// as expired), a fraction as its second. Recount makes Counts agree with
// List; the marks then write the library's items anew; and the table's
// stream, handed to the handler with events on (every INSERT, MODIFY
// and REMOVE of those items, and the REMOVE of a library message deleted
// with such an attribute), fails no record, after which Counts still
// agrees with List.
func TestHostileTimes(t *testing.T) {
	t.Parallel()
	racetest.SkipUnderRace(t, "dynamo/conformance_test.go")
	ctx := context.Background()
	h, arn := newForeignHarness(t)
	c, table, store := h.raw, h.table, h.Store
	ib := inbox.New(store, inbox.WithSharedCache(0))
	attrs := []string{"readat", "archivedat", "interactedat", "deletedat", "snoozeduntil", "deliverat", "expiredat", "headers.received", "headers.delivered"}
	var users []inbox.User
	n := 0
	for ai, attr := range attrs {
		for vi, hv := range hostileAttrValues {
			if attr != "readat" && (ai+vi)%4 != 0 {
				// Every value on readat, a quarter of them in turn on each
				// other attribute: each value on two or more, within the
				// test's time (driver's tests parse every value alike, and
				// storetest's ForeignTimes runs the attributes on both
				// stores).
				continue
			}
			v := hv.v
			_, isTime := v.(*types.AttributeValueMemberN)
			isTime = isTime && (hv.name == "1.5e-3" || hv.name == "a fraction")
			switch _, num := v.(*types.AttributeValueMemberN); {
			case num && attr == "expiredat" && !isTime:
				continue // a number is an expiry, clamped (driver.ParseExpiryAttr)
			case isTime && (attr == "snoozeduntil" || attr == "deliverat"):
				continue // another time: another program moved the snooze or due time, which its timed entry does not follow
			}
			n++
			what := attr + " " + hv.name
			scope := inbox.Scope{Tenant: "acme", Inbox: fmt.Sprintf("i%d", n)}
			u := scope.User("ann")
			users = append(users, u)
			p := u.Partition()
			pub := func(d inbox.Draft) string {
				t.Helper()
				r, err := ib.Publish(ctx, scope, []string{u.ID}, d)
				if err != nil {
					t.Fatal(err)
				}
				return r.Message.ID
			}
			b, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "everyone", Category: "news"})
			if err != nil {
				t.Fatal(err)
			}
			b2, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "everyone again"})
			if err != nil {
				t.Fatal(err)
			}
			own, doomed := pub(inbox.Draft{Title: "own", Category: "billing"}), pub(inbox.Draft{Title: "doomed"})
			snoozed, later := pub(inbox.Draft{Title: "snoozed"}), pub(inbox.Draft{Title: "later", DeliverAt: time.Now().Add(time.Hour)})
			for _, id := range []string{own, b.ID} {
				if _, err := ib.MarkRead(ctx, u, id); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := ib.Snooze(ctx, u, snoozed, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC().Truncate(time.Second)
			foreign := driver.Record{Partition: p, Message: driver.Message{ID: inbox.IDAt(now.Add(-time.Minute)), Title: "foreign", Body: "b", Sender: "other",
				Audience: driver.Audience{Kind: driver.AudienceUsers, UIDs: []string{u.ID}}, ReceivedAt: now, DeliveredAt: now, ExpiresAt: now.Add(24 * time.Hour)}}
			receipt := driver.Record{Partition: p, Receipt: true, Message: driver.Message{ID: b2.ID, ReadAt: now, ExpiresAt: b2.ExpiresAt}}
			if err := h.PutForeign(ctx, foreign, []driver.Counter{{Partition: p, Published: 1}}); err != nil {
				t.Fatal(err)
			}
			if err := h.PutForeign(ctx, receipt, []driver.Counter{{Partition: p, Read: 1}}); err != nil {
				t.Fatal(err)
			}
			if err := countsVsList(ctx, ib, u); err != nil {
				t.Fatalf("%s: before the attribute: %v", what, err)
			}
			// Another program writes the attribute: on every item of the
			// user's partition, and on the broadcast.
			messages := []string{own, doomed, snoozed, later, foreign.Message.ID}
			items := append(append([]string{}, messages...), b.ID, b2.ID) // b's and b2's receipts
			if !strings.HasPrefix(attr, "headers.") {
				for _, id := range items {
					setAttr(t, c, table, p, driver.MessageSK(id), "SET "+attr+" = :v", v)
				}
			} else {
				for _, id := range messages {
					setAttr(t, c, table, p, driver.MessageSK(id), "SET "+attr+" = :v", v)
				}
			}
			setAttr(t, c, table, scope.Public(), driver.MessageSK(b.ID), "SET "+attr+" = :v", v)

			// What the user does not see: expired (expiredat that holds no
			// number, or a time past; b2, whose broadcast is not, shows),
			// not due (a deliverat that holds no time reads as its pending
			// entry's), deleted (a time, in a numeral of its own).
			hidden := func(id string) bool {
				return attr == "expiredat" && id != b2.ID || id == later || attr == "deletedat" && isTime && (id == b.ID || id == b2.ID)
			}
			for _, id := range append(messages, b.ID, b2.ID) {
				_, err := ib.Get(ctx, u, id)
				if hidden(id) && !errors.Is(err, inbox.ErrNotFound) || !hidden(id) && err != nil {
					t.Errorf("%s: Get(%s): %v; want found: %v", what, id, err, !hidden(id))
				}
			}
			if _, err := ib.Counts(ctx, u); err != nil {
				t.Errorf("%s: Counts: %v", what, err)
			}
			if _, err := ib.List(ctx, u, inbox.ListOptions{UnreadOnly: true}); err != nil {
				t.Errorf("%s: List(unread): %v", what, err)
			}
			if _, err := ib.Recount(ctx, u); err != nil {
				t.Errorf("%s: Recount: %v", what, err)
				continue
			}
			if err := countsVsList(ctx, ib, u); err != nil {
				t.Errorf("%s: after Recount: %v", what, err)
			}
			if attr != "expiredat" { // expired, the messages take no marks
				for _, mk := range []struct {
					name string
					do   func(context.Context, inbox.User, string) (bool, error)
					ids  []string
				}{
					{"MarkRead", ib.MarkRead, []string{foreign.Message.ID, b2.ID, snoozed}},
					{"Archive", ib.Archive, []string{own, foreign.Message.ID}},
					{"MarkInteracted", ib.MarkInteracted, []string{own, b.ID}},
					{"Unsnooze", ib.Unsnooze, []string{snoozed}},
				} {
					for _, id := range mk.ids {
						if _, err := mk.do(ctx, u, id); err != nil && !hidden(id) {
							t.Errorf("%s: %s(%s): %v", what, mk.name, id, err)
						}
					}
				}
				for _, id := range []string{own, foreign.Message.ID, b2.ID, snoozed} {
					if hidden(id) {
						continue
					}
					if m, err := ib.Get(ctx, u, id); err != nil || !m.IsRead() && id != own {
						t.Errorf("%s: after the marks, Get(%s) = read %v, %v; want it read", what, id, m.IsRead(), err)
					}
				}
				// The marks wrote the library's message anew: its marks
				// hold times, or are gone.
				if item := rawQuery(t, c, table, p.PK(), driver.MessageSK(own)); len(item) != 1 {
					t.Errorf("%s: the library's message is gone", what)
				} else if a, ok := item[0][attr]; ok && (attr == "readat" || attr == "archivedat" || attr == "interactedat" || attr == "snoozeduntil") {
					if nv, isN := a.(*types.AttributeValueMemberN); !isN || !validTime(nv.Value) {
						t.Errorf("%s: the library's message after its marks holds %s %v", what, attr, a)
					}
				}
				if err := countsVsList(ctx, ib, u); err != nil {
					t.Errorf("%s: after the marks: %v", what, err)
				}
				if _, err := ib.Recount(ctx, u); err != nil {
					t.Errorf("%s: Recount after the marks: %v", what, err)
				}
				if err := countsVsList(ctx, ib, u); err != nil {
					t.Errorf("%s: after the marks and Recount: %v", what, err)
				}
			}
			if isTime {
				continue // a mark another program made and did not count: Recount's, above
			}
			// Another program writes the attribute again on the library's
			// message (read and archived by the marks: MarkInteracted
			// reads), and on another that it then deletes: the stream
			// accounts the change and the removal as the items read, and
			// Counts agrees with List after it without a Recount. A readat
			// that holds no time is unread: the program counts it as the
			// seeds count a change of readat (read -1 in c#* and
			// c#billing), and the stream handler the rest (the archived
			// tallies). (An expiry another program changes is left to
			// Recount: the stream does not follow it.)
			if attr != "expiredat" {
				setAttr(t, c, table, p, driver.MessageSK(own), "SET "+attr+" = :v", v)
			}
			if attr == "readat" {
				if err := h.addForeign(ctx, []driver.Counter{{Partition: p, Read: -1}, {Partition: p, Category: "billing", Read: -1}}); err != nil {
					t.Fatal(err)
				}
			}
			setAttr(t, c, table, p, driver.MessageSK(doomed), "SET "+attr+" = :v", v)
			deleteItem(t, c, table, p, driver.MessageSK(doomed))
		}
	}
	ib = handleStream(t, store, arn)
	for i, u := range users {
		if err := countsVsList(ctx, ib, u); err != nil {
			t.Errorf("case %d (%s) after the stream: %v", i+1, u.Scope.Inbox, err)
		}
	}
}
