package inbox_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
)

// hostileTimes are values another program may write into a time attribute
// that hold no time (see driver.ParseTimeAttr): a string, NULL, a
// boolean, numbers outside the years 1970 to 9999 (1e30, milliseconds,
// negative, the zero time's second).
var hostileTimes = map[string]events.DynamoDBAttributeValue{
	`"x"`:          s("x"),
	"NULL":         events.NewNullAttribute(),
	"true":         events.NewBooleanAttribute(true),
	"1e30":         n("1e30"),
	"-1e30":        n("-1e30"),
	"1e999999":     n("1e999999"),
	"milliseconds": n("1700000000000"),
	"year 10000":   n("253402300800"),
	"zero time":    n("-62135596800"),
	"-1":           n("-1"),
	"-0.5":         n("-0.5"),
	"a list":       events.NewListAttribute([]events.DynamoDBAttributeValue{n("1700000000")}),
}

// timeImages are images of items in a user's partition and a broadcast,
// unexpired: another program's and the library's (a ledger entry, its
// counted marks).
func timeImages() map[string]map[string]events.DynamoDBAttributeValue {
	later := time.Unix(4102444800, 0)
	ledgered := func(img map[string]events.DynamoDBAttributeValue, counted string) map[string]events.DynamoDBAttributeValue {
		return withAttr(withAttr(img, driver.LedgerAttribute, s(driver.LedgerSK(later, imageID, "t"))), driver.CountedAttribute, n(counted))
	}
	unexpired := func(img map[string]events.DynamoDBAttributeValue) map[string]events.DynamoDBAttributeValue {
		return withAttr(img, "expiredat", n("4102444800"))
	}
	entry := driver.LedgerSK(later, imageID, "t")
	until, due := time.Unix(4102444000, 0), time.Unix(4102443000, 0)
	snoozed := withAttr(withAttr(ledgered(unexpired(messageImage("ann", "users", "", false)), "1"), "snoozeduntil", n("4102444000")), driver.TimedAttribute, s(driver.TimedKey(until, entry, false)))
	scheduled := withAttr(withAttr(ledgered(unexpired(messageImage("ann", "users", "", false)), "1"), "deliverat", n("4102443000")), driver.TimedAttribute, s(driver.TimedKey(due, entry, true)))
	return map[string]map[string]events.DynamoDBAttributeValue{
		"the library's snoozed message":   snoozed,
		"the library's scheduled message": scheduled,
		"another program's message":       unexpired(messageImage("ann", "users", "billing", false)),
		"another program's read message":  unexpired(messageImage("ann", "users", "", true)),
		"another program's receipt":       unexpired(receiptImage("ann", "ops")),
		"the library's message":           ledgered(unexpired(messageImage("ann", "users", "billing", false)), "1"),
		"the library's read message":      ledgered(unexpired(messageImage("ann", "users", "", true)), "3"),
		"the library's receipt":           ledgered(unexpired(receiptImage("ann", "ops")), "3"),
		"a broadcast":                     unexpired(messageImage(inbox.PublicGroup, "everyone", "", false)),
		"the library's broadcast":         withAttr(unexpired(messageImage(inbox.PublicGroup, "everyone", "", false)), driver.LedgerAttribute, s(driver.LedgerSK(later, imageID, "t"))),
	}
}

// setTime returns a copy of img with time attribute attr (headers.<name>
// for a header's) set to v, or left out if v is nil.
func setTime(img map[string]events.DynamoDBAttributeValue, attr string, v *events.DynamoDBAttributeValue) map[string]events.DynamoDBAttributeValue {
	out := maps.Clone(img)
	target := out
	if name, ok := cutHeader(attr); ok {
		h, isMap := out["headers"]
		if !isMap || h.DataType() != events.DataTypeMap {
			return out
		}
		target = maps.Clone(h.Map())
		out["headers"] = m(target)
		attr = name
	}
	if v == nil {
		delete(target, attr)
	} else {
		target[attr] = *v
	}
	return out
}

func cutHeader(attr string) (string, bool) {
	const prefix = "headers."
	if len(attr) > len(prefix) && attr[:len(prefix)] == prefix {
		return attr[len(prefix):], true
	}
	return "", false
}

// outcome is what the handler of a fresh Inbox on memstore, with events
// on, makes of r: the failed records, the events, and the counters.
type outcome struct {
	Failed   []string
	Events   []inbox.Event
	Counters []driver.Counter
}

func outcomeOf(t *testing.T, r events.DynamoDBEventRecord) outcome {
	t.Helper()
	st := memstore.New()
	log := &eventLog{}
	failed := handle(t, inbox.New(st, inbox.WithEvents(log.handle)), r)
	return outcome{Failed: failed, Events: log.take(), Counters: counters(t, st, "ann", inbox.PublicGroup)}
}

// TestStreamHandlerHostileTimes: a time attribute that holds no time
// (hostileTimes; for expiredat, one that holds no number) fails no record
// of the stream: the handler reads it as the Stores do, as if the item
// had no such attribute, so that an INSERT, MODIFY or REMOVE of the item
// makes the events and the accounting of the item without it. Marks on a
// broadcast and deletedat on a direct message, which the Stores read as
// no marks, fail nothing either: the REMOVE of such an item is accounted.
func TestStreamHandlerHostileTimes(t *testing.T) {
	attrs := []string{"readat", "archivedat", "interactedat", "deletedat", "snoozeduntil", "deliverat", "expiredat", "headers.received", "headers.delivered"}
	runs := 0
	for name, img := range timeImages() {
		for _, attr := range attrs {
			for vn, v := range hostileTimes {
				if attr == "expiredat" && v.DataType() == events.DataTypeNumber {
					continue // a number is an expiry, clamped: see driver.ParseExpiryAttr
				}
				with, without := setTime(img, attr, &v), setTime(img, attr, nil)
				for _, op := range []struct {
					name     string
					with, wo events.DynamoDBEventRecord
				}{
					{"INSERT", change("e1", "INSERT", nil, with), change("e1", "INSERT", nil, without)},
					{"MODIFY", change("e2", "MODIFY", without, with), change("e2", "MODIFY", without, without)},
					{"REMOVE", record("e3", "REMOVE", with), record("e3", "REMOVE", without)},
				} {
					what := fmt.Sprintf("%s, %s %s, %s", name, attr, vn, op.name)
					got, want := outcomeOf(t, op.with), outcomeOf(t, op.wo)
					if len(want.Failed) != 0 {
						t.Fatalf("%s: the item without the attribute failed: %v", what, want.Failed)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s: outcome (-without +with):\n%s", what, diff)
					}
					runs++
				}
			}
		}
	}
	t.Logf("%d records, each as its item without the attribute", runs)

	// Marks where the Stores read none: removed, the item is accounted
	// as without them.
	bcast := timeImages()["a broadcast"]
	direct := timeImages()["another program's message"]
	for _, c := range []struct {
		name, attr string
		img        map[string]events.DynamoDBAttributeValue
		counter    string
	}{
		{"readat on a broadcast", "readat", bcast, inbox.PublicGroup},
		{"archivedat on a broadcast", "archivedat", bcast, inbox.PublicGroup},
		{"deletedat on a broadcast", "deletedat", bcast, inbox.PublicGroup},
		{"interactedat on a broadcast", "interactedat", bcast, inbox.PublicGroup},
		{"deletedat on a direct message", "deletedat", direct, "ann"},
	} {
		v := n("1700000050")
		got, want := outcomeOf(t, record("e4", "REMOVE", setTime(c.img, c.attr, &v))), outcomeOf(t, record("e4", "REMOVE", c.img))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: outcome (-without +with):\n%s", c.name, diff)
		}
		total := 0
		for _, ctr := range got.Counters {
			if ctr.Category == "" && ctr.Group == "" && ctr.Partition == partitionOf(c.counter) && ctr.Published == -1 {
				total++
			}
		}
		if total != 1 {
			t.Errorf("%s: counters after the REMOVE %+v, want published -1 in %s's total", c.name, got.Counters, c.counter)
		}
	}
}

// TestStreamHandlerTimesAsStores: the times the handler reads from an
// image are those the Stores read (driver.ParseTimeAttr,
// driver.ParseExpiryAttr): a fraction of a second rounded down (up for
// an expiry), an expiry past what a ledger key holds clamped to it, and
// a library message's snoozeduntil or deliverat that holds no time the
// time of the timed entry it notes.
func TestStreamHandlerTimesAsStores(t *testing.T) {
	for name, want := range map[string]time.Time{"the library's snoozed message": time.Unix(4102444000, 0).UTC(), "the library's scheduled message": time.Unix(4102443000, 0).UTC()} {
		attr := "snoozeduntil"
		if want.Unix() == 4102443000 {
			attr = "deliverat"
		}
		for vn, v := range hostileTimes {
			got := outcomeOf(t, change("e1", "INSERT", nil, withAttr(timeImages()[name], attr, v)))
			if len(got.Failed) != 0 || len(got.Events) != 1 {
				t.Fatalf("%s, %s %s: failed %v, events %+v; want one event", name, attr, vn, got.Failed, got.Events)
			}
			at := got.Events[0].Message.SnoozedUntil
			if attr == "deliverat" {
				at = got.Events[0].Message.DeliverAt
			}
			if !at.Equal(want) {
				t.Errorf("%s, %s %s: reads %v, want its timed entry's %v", name, attr, vn, at, want)
			}
		}
	}
	img := withAttr(withAttr(messageImage("ann", "users", "", false), "readat", n("1700000050.75")), "expiredat", n("1e30"))
	img["headers"] = m(maps.Clone(img["headers"].Map()))
	img["headers"].Map()["received"] = n("1700000000.5")
	got := outcomeOf(t, change("e1", "INSERT", nil, img))
	if len(got.Failed) != 0 || len(got.Events) != 1 {
		t.Fatalf("INSERT: failed %v, events %+v; want one event", got.Failed, got.Events)
	}
	msg := got.Events[0].Message
	for _, c := range []struct {
		what      string
		got, want time.Time
	}{
		{"ReadAt", msg.ReadAt, time.Unix(1700000050, 0).UTC()},
		{"ReceivedAt", msg.ReceivedAt, time.Unix(1700000000, 0).UTC()},
		{"ExpiresAt", msg.ExpiresAt, time.Unix(driver.MaxExpiryEpoch, 0).UTC()},
	} {
		if !c.got.Equal(c.want) {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}
