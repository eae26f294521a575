package inbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
)

// eventLog is an EventHandler that records the events it is given and
// fails those whose ID is in fail.
type eventLog struct {
	mu   sync.Mutex
	got  []inbox.Event
	fail map[string]bool
}

var errPushDown = errors.New("push service down")

func (l *eventLog) handle(_ context.Context, e inbox.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, e)
	if l.fail[e.ID] {
		return errPushDown
	}
	return nil
}

// take returns the events recorded so far and forgets them.
func (l *eventLog) take() []inbox.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.got
	l.got = nil
	return out
}

// change returns a stream record of event name on the item at keys of the
// images old and new (either may be nil), made at 1700000060 by a user
// (not by TTL).
func change(id, name string, old, new map[string]events.DynamoDBAttributeValue) events.DynamoDBEventRecord {
	r := record(id, name, old)
	r.UserIdentity = nil
	r.Change.NewImage = new
	r.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: time.Unix(1700000060, 0)}
	if new != nil {
		r.Change.Keys = map[string]events.DynamoDBAttributeValue{"pk": new["pk"], "sk": new["sk"]}
	}
	return r
}

// withAttr returns a copy of img with attribute name set to v.
func withAttr(img map[string]events.DynamoDBAttributeValue, name string, v events.DynamoDBAttributeValue) map[string]events.DynamoDBAttributeValue {
	out := make(map[string]events.DynamoDBAttributeValue, len(img)+1)
	for k, a := range img {
		out[k] = a
	}
	out[name] = v
	return out
}

// withHeader returns a copy of message image img with header name set to v.
func withHeader(img map[string]events.DynamoDBAttributeValue, name string, v events.DynamoDBAttributeValue) map[string]events.DynamoDBAttributeValue {
	return withAttr(img, "headers", m(withAttr(img["headers"].Map(), name, v)))
}

// seenItem is the image of ann's seen watermark item.
func seenItem(w string) map[string]events.DynamoDBAttributeValue {
	return map[string]events.DynamoDBAttributeValue{
		"pk": s(userPK("ann")), "sk": s(driver.SeenSK), "kind": s("SN"), "seen": s(w),
		"tenant_key": s("acme"), "inbox_key": s("alerts"), "uid": s("ann"),
	}
}

// prefsItem is the image of ann's preferences item, muting the groups
// muted ("" for none).
func prefsItem(muted string) map[string]events.DynamoDBAttributeValue {
	img := map[string]events.DynamoDBAttributeValue{
		"pk": s(userPK("ann")), "sk": s(driver.PreferencesSK), "kind": s("UP"),
		"tenant_key": s("acme"), "inbox_key": s("alerts"), "uid": s("ann"),
	}
	if muted != "" {
		img["muted"] = s(muted)
	}
	return img
}

// groupImage is the image of a message to group g.
func groupImage(g string) map[string]events.DynamoDBAttributeValue {
	img := messageImage("G:"+g, "group", "ops", false)
	img["headers"].Map()["audiences"] = m(map[string]events.DynamoDBAttributeValue{"kind": s("group"), "label": s("Admins"), "group": s(g)})
	img["uid"] = s(g)
	return img
}

// imageMessage is the message the images above hold.
func imageMessage(aud inbox.Audience, category string) inbox.Message {
	return inbox.Message{
		ID: imageID, Sender: "ops", Audience: aud, Category: category, Title: "hi", Body: "b",
		ReceivedAt: time.Unix(1700000000, 0).UTC(), DeliveredAt: time.Unix(1700000000, 0).UTC(), ExpiresAt: time.Unix(1700000100, 0).UTC(),
	}
}

// TestStreamHandlerEvents: each change of a message item makes one event
// of its kind, in the partition of the record's key; receipts make read
// events of the user's; everything else makes none.
func TestStreamHandlerEvents(t *testing.T) {
	at := time.Unix(1700000060, 0).UTC()
	readAt := time.Unix(1700000050, 0).UTC()
	direct := imageMessage(inbox.Audience{Kind: inbox.AudienceUsers}, "billing")
	readDirect := direct
	readDirect.ReadAt = readAt
	counter := map[string]events.DynamoDBAttributeValue{"pk": s(userPK("ann")), "sk": s("c#*"), "kind": s("US"), "published": n("1"), "read": n("0")}
	receipt := receiptImage("ann", "ops")
	receipt["group"] = s("admins")
	archivedAt := time.Unix(1700000055, 0).UTC()
	archivedDirect := direct
	archivedDirect.ArchivedAt = archivedAt
	archivedReceipt := withAttr(receiptImage("ann", "ops"), "archivedat", n("1700000055"))
	delete(archivedReceipt, "readat")
	hiddenReceipt := withAttr(receiptImage("ann", "ops"), "deletedat", n("1700000056"))
	delete(hiddenReceipt, "readat")
	receiptMessage := func(readAt, archivedAt time.Time) inbox.Message {
		return inbox.Message{ID: imageID, Category: "ops", ReadAt: readAt, ArchivedAt: archivedAt, ExpiresAt: time.Unix(1700000100, 0).UTC()}
	}
	ttlRemoval := record("e9", "REMOVE", messageImage(inbox.PublicGroup, "everyone", "", false))
	ttlRemoval.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: at}

	for name, c := range map[string]struct {
		rec  events.DynamoDBEventRecord
		want []inbox.Event
	}{
		"direct message": {
			change("e1", "INSERT", nil, messageImage("ann", "users", "billing", false)),
			[]inbox.Event{{ID: "e1/created", Kind: inbox.EventCreated, Partition: partitionOf("ann"), Message: direct, At: at}},
		},
		"broadcast": {
			change("e2", "INSERT", nil, messageImage(inbox.PublicGroup, "everyone", "", false)),
			[]inbox.Event{{ID: "e2/created", Kind: inbox.EventCreated, Partition: partitionOf(inbox.PublicGroup), Message: imageMessage(inbox.Audience{Kind: inbox.AudienceEveryone}, ""), At: at}},
		},
		"group message": {
			change("e3", "INSERT", nil, groupImage("admins")),
			[]inbox.Event{{ID: "e3/created", Kind: inbox.EventCreated, Partition: partitionOf("G:admins"), Message: imageMessage(inbox.Audience{Kind: inbox.AudienceGroup, Label: "Admins", Group: "admins"}, "ops"), At: at}},
		},
		"direct message read": {
			change("e4", "MODIFY", messageImage("ann", "users", "billing", false), messageImage("ann", "users", "billing", true)),
			[]inbox.Event{{ID: "e4/read", Kind: inbox.EventRead, Partition: partitionOf("ann"), Message: readDirect, At: at}},
		},
		"receipt of a group message": {
			change("e5", "INSERT", nil, receipt),
			[]inbox.Event{{ID: "e5/read", Kind: inbox.EventRead, Partition: partitionOf("ann"), Message: inbox.Message{ID: imageID, Category: "ops", Audience: inbox.Audience{Group: "admins"}, ReadAt: readAt, ExpiresAt: time.Unix(1700000100, 0).UTC()}, At: at}},
		},
		"direct copy deleted": {
			change("e6", "REMOVE", messageImage("ann", "users", "billing", false), nil),
			[]inbox.Event{{ID: "e6/deleted", Kind: inbox.EventDeleted, Partition: partitionOf("ann"), Message: direct, At: at}},
		},
		"broadcast removed": {
			change("e14", "REMOVE", messageImage(inbox.PublicGroup, "everyone", "", false), nil),
			[]inbox.Event{{ID: "e14/removed", Kind: inbox.EventRemoved, Partition: partitionOf(inbox.PublicGroup), Message: imageMessage(inbox.Audience{Kind: inbox.AudienceEveryone}, ""), At: at}},
		},
		"direct message archived": {
			change("e15", "MODIFY", messageImage("ann", "users", "billing", false), withAttr(messageImage("ann", "users", "billing", false), "archivedat", n("1700000055"))),
			[]inbox.Event{{ID: "e15/archived", Kind: inbox.EventArchived, Partition: partitionOf("ann"), Message: archivedDirect, At: at}},
		},
		"direct message unarchived": {
			change("e16", "MODIFY", withAttr(messageImage("ann", "users", "billing", false), "archivedat", n("1700000055")), messageImage("ann", "users", "billing", false)),
			[]inbox.Event{{ID: "e16/unarchived", Kind: inbox.EventUnarchived, Partition: partitionOf("ann"), Message: direct, At: at}},
		},
		"broadcast archived unread": {
			change("e17", "INSERT", nil, archivedReceipt),
			[]inbox.Event{{ID: "e17/archived", Kind: inbox.EventArchived, Partition: partitionOf("ann"), Message: receiptMessage(time.Time{}, archivedAt), At: at}},
		},
		"broadcast read and archived at once": {
			change("e18", "INSERT", nil, withAttr(archivedReceipt, "readat", n("1700000050"))),
			[]inbox.Event{
				{ID: "e18/read", Kind: inbox.EventRead, Partition: partitionOf("ann"), Message: receiptMessage(readAt, archivedAt), At: at},
				{ID: "e18/archived", Kind: inbox.EventArchived, Partition: partitionOf("ann"), Message: receiptMessage(readAt, archivedAt), At: at},
			},
		},
		"broadcast deleted for the user": {
			change("e19", "MODIFY", archivedReceipt, hiddenReceipt),
			[]inbox.Event{{ID: "e19/deleted", Kind: inbox.EventDeleted, Partition: partitionOf("ann"), Message: receiptMessage(time.Time{}, time.Time{}), At: at}},
		},
		"seen": {
			change("e21", "MODIFY", seenItem("01ARZ3NDEKTSV4RRFFQ69G5FAV"), seenItem("01ARZ3NDEKZZZZZZZZZZZZZZZZ")),
			[]inbox.Event{{ID: "e21/seen", Kind: inbox.EventSeen, Partition: partitionOf("ann"), At: at, Seen: "01ARZ3NDEKZZZZZZZZZZZZZZZZ"}},
		},
		"preferences set": {
			change("e22", "INSERT", nil, prefsItem("admins#ops")),
			[]inbox.Event{{ID: "e22/preferences", Kind: inbox.EventPreferences, Partition: partitionOf("ann"), At: at, Preferences: inbox.Preferences{MutedGroups: []string{"admins", "ops"}, Own: true}}},
		},
		"preferences with a muted thread": {
			change("e24", "MODIFY", prefsItem("admins#ops"), prefsItem("admins#??ann-bob?")),
			[]inbox.Event{{ID: "e24/preferences", Kind: inbox.EventPreferences, Partition: partitionOf("ann"), At: at, Preferences: inbox.Preferences{MutedGroups: []string{"admins"}, MutedThreads: []string{"ann-bob"}, Own: true}}},
		},
		"preferences cleared": {
			change("e23", "MODIFY", prefsItem("admins#ops"), prefsItem("")),
			[]inbox.Event{{ID: "e23/preferences", Kind: inbox.EventPreferences, Partition: partitionOf("ann"), At: at}},
		},
		"broadcast expired": {
			ttlRemoval,
			[]inbox.Event{{ID: "e9/expired", Kind: inbox.EventExpired, Partition: partitionOf(inbox.PublicGroup), Message: imageMessage(inbox.Audience{Kind: inbox.AudienceEveryone}, ""), At: at}},
		},
		"read message read again":   {change("e7", "MODIFY", messageImage("ann", "users", "", true), messageImage("ann", "users", "", true)), nil},
		"receipt removed":           {change("e8", "REMOVE", receiptImage("ann", ""), nil), nil},
		"counter updated":           {change("e10", "MODIFY", counter, counter), nil},
		"counter created":           {change("e11", "INSERT", nil, counter), nil},
		"unknown operation":         {change("e12", "UNKNOWN", nil, messageImage("ann", "users", "", false)), nil},
		"message rewritten, unread": {change("e13", "MODIFY", messageImage("ann", "users", "", false), messageImage("ann", "users", "", false)), nil},
	} {
		t.Run(name, func(t *testing.T) {
			log := &eventLog{}
			ib := inbox.New(memstore.New(), inbox.WithEvents(log.handle))
			if failed := handle(t, ib, c.rec); len(failed) > 0 {
				t.Fatalf("record failed: %v", failed)
			}
			if diff := cmp.Diff(c.want, log.take()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStreamHandlerReceiptRemovalEvents: the removal of an archived,
// unread receipt is the user's unarchive while its broadcast stands; once
// the broadcast is gone (removed before it expired: Recount removes its
// dead receipts) or expired by the removal's time, it makes no event.
func TestStreamHandlerReceiptRemovalEvents(t *testing.T) {
	at := time.Unix(1700000060, 0).UTC()
	archivedAt := time.Unix(1700000055, 0).UTC()
	receipt := withAttr(receiptImage("ann", "ops"), "archivedat", n("1700000055"))
	delete(receipt, "readat")
	unarchived := []inbox.Event{{ID: "e20/unarchived", Kind: inbox.EventUnarchived, Partition: partitionOf("ann"), At: at,
		Message: inbox.Message{ID: imageID, Category: "ops", ArchivedAt: archivedAt, ExpiresAt: time.Unix(1700000100, 0).UTC()}}}
	for name, c := range map[string]struct {
		expires time.Time // the broadcast's expiry; zero: no broadcast
		want    []inbox.Event
	}{
		"broadcast stands":             {time.Unix(1700000100, 0).UTC(), unarchived},
		"broadcast gone":               {time.Time{}, nil},
		"broadcast expired by then":    {at, nil},
		"broadcast expired just after": {at.Add(time.Second), unarchived},
	} {
		t.Run(name, func(t *testing.T) {
			clock := func() time.Time { return at }
			st := memstore.New(memstore.WithClock(clock))
			if !c.expires.IsZero() {
				b := driver.Record{Partition: partitionOf(inbox.PublicGroup), Message: driver.Message{ID: imageID, Category: "ops", ExpiresAt: c.expires}}
				if err := st.PutForeign(context.Background(), b, nil); err != nil {
					t.Fatal(err)
				}
			}
			log := &eventLog{}
			ib := inbox.New(st, inbox.WithClock(clock), inbox.WithEvents(log.handle))
			if failed := handle(t, ib, change("e20", "REMOVE", receipt, nil)); len(failed) > 0 {
				t.Fatalf("record failed: %v", failed)
			}
			if diff := cmp.Diff(c.want, log.take()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStreamHandlerEventsRefuse: with events on, a record that cannot make
// its event fails, and writes nothing; with events off, an INSERT or
// MODIFY record is read only to adopt another program's message, and one
// that does not decode is left alone.
func TestStreamHandlerEventsRefuse(t *testing.T) {
	foreign := messageImage("ann", "users", "", false)
	foreign["uid"] = s("bob")
	wrongAudience := messageImage("ann", "everyone", "", false)
	// A time out of range (received 1e300, readat -1e20) is no longer
	// refused: it reads as no time, as the Stores read it (see
	// TestStreamHandlerHostileTimes).
	for name, rec := range map[string]events.DynamoDBEventRecord{
		"attribute disagrees with key":  change("r1", "INSERT", nil, foreign),
		"broadcast in a user partition": change("r2", "INSERT", nil, wrongAudience),
		"modify without old image":      change("r5", "MODIFY", nil, messageImage("ann", "users", "", true)),
		"preferences of another user":   change("r7", "INSERT", nil, withAttr(prefsItem("ops"), "uid", s("bob"))),
		"preferences unsorted":          change("r8", "INSERT", nil, prefsItem("ops#admins")),
		"preferences muting everyone":   change("r9", "INSERT", nil, prefsItem(inbox.PublicGroup)),
		"preferences not a string":      change("r11", "INSERT", nil, withAttr(prefsItem("ops"), "muted", events.NewStringSetAttribute([]string{"*promo*"}))),
		"preferences of a group":        change("r10", "INSERT", nil, withAttr(withAttr(prefsItem("ops"), "pk", s(partitionOf("G:admins").PK())), "uid", s("admins"))),
		"insert without new image":      change("r6", "INSERT", nil, nil),
		// Attributes of a type the Stores refuse to decode (another
		// program's), which a reading as absent would make a receipt of
		// a message, a message of no category, or of no audience.
		"headers not a map":          change("r12", "INSERT", nil, withAttr(messageImage("ann", "users", "billing", false), "headers", s("x"))),
		"taxonomy not a map":         change("r13", "INSERT", nil, withAttr(messageImage("ann", "users", "billing", false), "taxonomy", s("billing"))),
		"category not a string":      change("r14", "INSERT", nil, withAttr(messageImage("ann", "users", "", false), "taxonomy", m(map[string]events.DynamoDBAttributeValue{"category": events.NewStringSetAttribute([]string{"billing"})}))),
		"audiences not a map":        change("r15", "INSERT", nil, withHeader(messageImage("ann", "users", "billing", false), "audiences", s("users"))),
		"audience kind not a string": change("r16", "INSERT", nil, withHeader(messageImage("ann", "users", "billing", false), "audiences", m(map[string]events.DynamoDBAttributeValue{"kind": events.NewListAttribute([]events.DynamoDBAttributeValue{s("users")})}))),
		"sender not a string":        change("r17", "INSERT", nil, withHeader(messageImage("ann", "users", "billing", false), "sender", events.NewBooleanAttribute(true))),
		"message not a map":          change("r18", "INSERT", nil, withAttr(messageImage("ann", "users", "billing", false), "message", s("hi"))),
		"uids not a list":            change("r19", "INSERT", nil, withAttr(flatImage("ann", "billing"), "audiences", m(map[string]events.DynamoDBAttributeValue{"kind": s("users"), "uids": s("ann")}))),
		"flat audiences not a map":   change("r20", "INSERT", nil, withAttr(flatImage("ann", "billing"), "audiences", s("users"))),
		"timed not a string":         change("r21", "INSERT", nil, withAttr(messageImage("ann", "users", "billing", false), driver.TimedAttribute, events.NewStringSetAttribute([]string{"x"}))),
		// A receipt's message too: the Stores decode it whatever the
		// item is, and refuse the item.
		"receipt's message not a map":    change("r22", "INSERT", nil, withAttr(receiptImage("ann", "billing"), "message", s("hi"))),
		"receipt's title not a string":   change("r23", "INSERT", nil, withAttr(receiptImage("ann", "billing"), "message", m(map[string]events.DynamoDBAttributeValue{"title": events.NewBooleanAttribute(true)}))),
		"receipt's cta_uri not a string": change("r24", "INSERT", nil, withAttr(receiptImage("ann", "billing"), "message", m(map[string]events.DynamoDBAttributeValue{"cta_uri": events.NewListAttribute(nil)}))),
		// And a thread, which they read only on a record with a ledger
		// entry: another program's message or receipt is in no thread,
		// whatever string or number it holds, but of another type the
		// Stores cannot read it.
		"another program's thread a map":           change("r25", "INSERT", nil, withAttr(messageImage("ann", "users", "billing", false), "thread", m(nil))),
		"another program's receipt's thread a set": change("r26", "MODIFY", receiptImage("ann", "billing"), withAttr(receiptImage("ann", "billing"), "thread", events.NewStringSetAttribute([]string{"t1"}))),
		// A ledger attribute of a type the Stores refuse (NULL is none).
		"ledger a number": change("r27", "INSERT", nil, withAttr(messageImage("ann", "users", "billing", false), driver.LedgerAttribute, n("7"))),
		"ledger a map":    change("r28", "INSERT", nil, withAttr(messageImage("ann", "users", "billing", false), driver.LedgerAttribute, m(nil))),
	} {
		t.Run(name, func(t *testing.T) {
			st := memstore.New()
			log := &eventLog{}
			if failed := handle(t, inbox.New(st, inbox.WithEvents(log.handle)), rec); len(failed) != 1 {
				t.Errorf("failures %v, want the record", failed)
			}
			if got := log.take(); len(got) != 0 {
				t.Errorf("events %v, want none", got)
			}
			if c := counters(t, st, "ann", inbox.PublicGroup); len(c) != 0 {
				t.Errorf("counters %v, want none", c)
			}
			if failed := handle(t, inbox.New(st), rec); len(failed) != 0 {
				t.Errorf("without events: failures %v, want none", failed)
			}
		})
	}
}

// TestStreamHandlerNumbersAsStrings: a string attribute that holds a
// number (another program's item) reads as its decimal, as the Stores
// decode it, so that an event shows the message List shows.
func TestStreamHandlerNumbersAsStrings(t *testing.T) {
	img := withAttr(messageImage("ann", "users", "billing", false), "message", m(map[string]events.DynamoDBAttributeValue{"title": n("12.50"), "body": s("b")}))
	img = withHeader(img, "sender", n("42"))
	img = withAttr(img, "taxonomy", m(map[string]events.DynamoDBAttributeValue{"category": n("7")}))
	failed, evs := handledAlone(t, change("n1", "INSERT", nil, img))
	if len(failed) != 0 || len(evs) != 1 {
		t.Fatalf("failures %v, events %v; want one event", failed, evs)
	}
	if got := evs[0].Message; got.Title != "12.50" || got.Sender != "42" || got.Category != "7" {
		t.Errorf("event's message has title %q, sender %q, category %q; want 12.50, 42 and 7", got.Title, got.Sender, got.Category)
	}
}

// TestStreamHandlerUIDsAsTheStoresRead: the uids of an audience read as
// the dynamo Store decodes them into its []string: a list's numbers as
// their decimals and its NULLs as "", a number set's numbers as their
// decimals; a list holding what is no string, number or NULL is refused.
func TestStreamHandlerUIDsAsTheStoresRead(t *testing.T) {
	audience := func(uids events.DynamoDBAttributeValue) map[string]events.DynamoDBAttributeValue {
		return withAttr(flatImage("ann", "billing"), "audiences", m(map[string]events.DynamoDBAttributeValue{"kind": s("users"), "label": s(""), "uids": uids}))
	}
	for name, c := range map[string]struct {
		uids events.DynamoDBAttributeValue
		want []string
	}{
		"list":       {events.NewListAttribute([]events.DynamoDBAttributeValue{s("ann"), n("42"), events.NewNullAttribute()}), []string{"ann", "42", ""}},
		"number set": {events.NewNumberSetAttribute([]string{"42", "7"}), []string{"42", "7"}},
	} {
		failed, evs := handledAlone(t, change("u-"+name, "INSERT", nil, audience(c.uids)))
		if len(failed) != 0 || len(evs) != 1 {
			t.Errorf("%s: failures %v, events %v; want one event", name, failed, evs)
			continue
		}
		if diff := cmp.Diff(c.want, evs[0].Message.Audience.UIDs); diff != "" {
			t.Errorf("%s: uids (-want +got):\n%s", name, diff)
		}
	}
	for name, uids := range map[string]events.DynamoDBAttributeValue{
		"bool":    events.NewBooleanAttribute(true),
		"map":     m(map[string]events.DynamoDBAttributeValue{}),
		"set":     events.NewStringSetAttribute([]string{"ann"}),
		"list":    events.NewListAttribute(nil),
		"binary":  events.NewBinaryAttribute([]byte("ann")),
		"bin set": events.NewBinarySetAttribute([][]byte{[]byte("ann")}),
	} {
		img := audience(events.NewListAttribute([]events.DynamoDBAttributeValue{s("ann"), uids}))
		if failed, evs := handledAlone(t, change("ub-"+name, "INSERT", nil, img)); len(failed) != 1 || len(evs) != 0 {
			t.Errorf("a list of uids holding a %s: failures %v, events %v; want the record to fail", name, failed, evs)
		}
	}
}

// TestStreamHandlerNullLedger: another program's message whose ledger
// attribute is NULL has no ledger entry, as the Stores read it: its
// INSERT makes its event, and its MODIFY its read's.
func TestStreamHandlerNullLedger(t *testing.T) {
	img := withAttr(messageImage("ann", "users", "billing", false), driver.LedgerAttribute, events.NewNullAttribute())
	for _, c := range []struct {
		rec  events.DynamoDBEventRecord
		kind inbox.EventKind
	}{
		{change("l1", "INSERT", nil, img), inbox.EventCreated},
		{change("l2", "MODIFY", img, withAttr(img, "readat", n("1700000050"))), inbox.EventRead},
	} {
		failed, evs := handledAlone(t, c.rec)
		if len(failed) != 0 || len(evs) != 1 || evs[0].Kind != c.kind || evs[0].Message.ID != imageID {
			t.Errorf("%s: failures %v, events %v; want one %s event of %s", c.rec.EventName, failed, evs, c.kind, imageID)
		}
	}
}

// TestStreamHandlerFlatNullAudiences: a message in seed 000's layout
// whose audiences are NULL is a message of no audience, as the Stores
// read it (any audiences attribute makes the layout), not a receipt.
func TestStreamHandlerFlatNullAudiences(t *testing.T) {
	failed, evs := handledAlone(t, change("n2", "INSERT", nil, withAttr(flatImage("ann", "billing"), "audiences", events.NewNullAttribute())))
	if len(failed) != 0 || len(evs) != 1 {
		t.Fatalf("failures %v, events %v; want one event", failed, evs)
	}
	if e := evs[0]; e.Kind != inbox.EventCreated || e.Message.Title != "hi" || e.Message.Sender != "ops" {
		t.Errorf("event %s of a message titled %q from %q; want created, hi, ops", e.Kind, e.Message.Title, e.Message.Sender)
	}
}

// TestStreamHandlerRemovesUndecodable: the removal of another program's
// item whose attributes hold a type the Stores refuse (which an INSERT or
// MODIFY fails, above) is accounted as its image reads, with events on or
// off: it does not fail, so it holds up no shard of the stream.
func TestStreamHandlerRemovesUndecodable(t *testing.T) {
	rec := change("r30", "REMOVE", withAttr(messageImage("ann", "users", "billing", false), "taxonomy", s("billing")), nil)
	for _, opts := range [][]inbox.Option{nil, {inbox.WithEvents((&eventLog{}).handle)}} {
		if failed := handle(t, inbox.New(memstore.New(), opts...), rec); len(failed) != 0 {
			t.Errorf("events %v: failures %v, want none", opts != nil, failed)
		}
	}
}

// TestStreamHandlerEventFailure: an EventHandler error fails only its
// record; the record's accounting is applied once, and its event comes
// again, with the same ID, when the record is redelivered.
func TestStreamHandlerEventFailure(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	log := &eventLog{fail: map[string]bool{"d2/deleted": true}}
	ib := inbox.New(st, inbox.WithEvents(log.handle), inbox.WithConcurrency(3))
	var batch []events.DynamoDBEventRecord
	for _, id := range []string{"d1", "d2", "d3"} {
		res, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: id, TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		k := driver.Key{Partition: partitionOf("ann"), ID: res.Message.ID}
		rec := stored(t, st, k)
		if _, err := st.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
		batch = append(batch, change(id, "REMOVE", imageOf(rec), nil))
	}
	if diff := cmp.Diff([]string{"seq-d2"}, handle(t, ib, batch...)); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
	ids := func(evs []inbox.Event) (out []string) {
		for _, e := range evs {
			out = append(out, e.ID)
		}
		return out
	}
	if diff := cmp.Diff([]string{"d1/deleted", "d2/deleted", "d3/deleted"}, ids(log.take())); diff != "" {
		t.Errorf("events, in the batch's order (-want +got):\n%s", diff)
	}
	want := []driver.Counter{{Partition: partitionOf("ann")}}
	if diff := cmp.Diff(want, counters(t, st, "ann")); diff != "" {
		t.Errorf("counters after the batch (-want +got):\n%s", diff)
	}
	// Lambda resumes from the failed record: d2 and d3 come again.
	delete(log.fail, "d2/deleted")
	if failed := handle(t, ib, batch[1:]...); len(failed) != 0 {
		t.Errorf("redelivery failures %v", failed)
	}
	if diff := cmp.Diff([]string{"d2/deleted", "d3/deleted"}, ids(log.take())); diff != "" {
		t.Errorf("redelivered events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, counters(t, st, "ann")); diff != "" {
		t.Errorf("counters after redelivery moved (-want +got):\n%s", diff)
	}
}

// partitionStore records the partitions of the removals applied to it.
type partitionStore struct {
	inbox.Store
	mu    sync.Mutex
	parts []inbox.Partition
}

func (p *partitionStore) ApplyRemoval(ctx context.Context, r driver.Removal) (bool, error) {
	p.mu.Lock()
	p.parts = append(p.parts, r.Record.Partition)
	for _, d := range r.Deltas {
		p.parts = append(p.parts, d.Partition)
	}
	p.mu.Unlock()
	return p.Store.ApplyRemoval(ctx, r)
}

func (p *partitionStore) Mark(ctx context.Context, marks []driver.Mark, deltas []driver.Counter) error {
	p.mu.Lock()
	for _, mk := range marks {
		p.parts = append(p.parts, mk.Key.Partition)
	}
	for _, d := range deltas {
		p.parts = append(p.parts, d.Partition)
	}
	p.mu.Unlock()
	return p.Store.Mark(ctx, marks, deltas)
}

// FuzzStreamRecord feeds the handler, with events on, stream records as
// Lambda's JSON: it must not panic, and whatever a record holds, its
// accounting and its events stay in the partition of the record's key. A
// counted attribute that holds no set of marks reads as none: the record
// fails, or not, and makes the same events, as without it.
func FuzzStreamRecord(f *testing.F) {
	receipt := receiptImage("ann", "ops")
	receipt["group"] = s("admins")
	later := time.Unix(4102444800, 0)
	edited := withAttr(withAttr(withAttr(messageImage("ann", "users", "", false), "expiredat", n("4102444800")),
		driver.LedgerAttribute, s(driver.LedgerSK(later, imageID, "t"))), driver.CountedAttribute, n("1"))
	for _, r := range []events.DynamoDBEventRecord{
		change("e1", "INSERT", nil, messageImage("ann", "users", "billing", false)),
		change("e2", "MODIFY", messageImage("ann", "users", "", false), messageImage("ann", "users", "", true)),
		change("e3", "INSERT", nil, groupImage("admins")),
		change("e4", "INSERT", nil, receipt),
		record("e5", "REMOVE", messageImage(inbox.PublicGroup, "everyone", "", false)),
		record("e6", "REMOVE", flatImage("ann", "x")),
		change("e7", "INSERT", nil, seenItem("01ARZ3NDEKZZZZZZZZZZZZZZZZ")),
		change("e22", "MODIFY", prefsItem("admins"), prefsItem("admins#ops")),
		change("e8", "MODIFY", receiptImage("ann", ""), withAttr(receiptImage("ann", ""), "archivedat", n("1700000055"))),
		change("e9", "MODIFY", edited, withAttr(edited, "readat", n("4102444000"))), // another program's read of the library's message
		// Another program's counted, which is no set of marks.
		record("e10", "REMOVE", withAttr(edited, driver.CountedAttribute, n("256"))),
		record("e11", "REMOVE", withAttr(edited, driver.CountedAttribute, n("-1"))),
		record("e12", "REMOVE", withAttr(edited, driver.CountedAttribute, s("x"))),
		change("e13", "MODIFY", edited, withAttr(edited, driver.CountedAttribute, n("1e30"))),
		change("e14", "INSERT", nil, withAttr(messageImage("ann", "users", "", false), driver.CountedAttribute, n("9"))),
		// Times that hold no time, and marks the Stores read as none.
		change("e15", "MODIFY", edited, withAttr(edited, "readat", s("x"))),
		record("e16", "REMOVE", withAttr(messageImage("ann", "users", "", false), "expiredat", s("x"))),
		change("e17", "INSERT", nil, withAttr(edited, "archivedat", n("1e30"))),
		record("e18", "REMOVE", withAttr(edited, "snoozeduntil", n("1700000000000"))),
		change("e19", "MODIFY", edited, withAttr(edited, "deliverat", events.NewBooleanAttribute(true))),
		record("e20", "REMOVE", withAttr(messageImage(inbox.PublicGroup, "everyone", "", false), "readat", n("1700000050"))),
		record("e21", "REMOVE", withAttr(withAttr(receiptImage("ann", ""), "deletedat", n("-62135596800")), "readat", n("1700000050.5"))),
		// Another program's message, in no thread whatever its thread
		// holds; an unread receipt unarchived (its broadcast read).
		record("e23", "REMOVE", withAttr(messageImage("ann", "users", "", true), "thread", s("a#b"))),
		record("e24", "REMOVE", withAttr(func() map[string]events.DynamoDBAttributeValue {
			r := receiptImage("ann", "ops")
			delete(r, "readat")
			return r
		}(), "archivedat", n("1700000055"))),
		// What the Stores never read, of any type (a table without the
		// indexes takes any): the indexes' keys, a message's group.
		change("e25", "INSERT", nil, withAttr(messageImage("ann", "users", "", false), "unread", events.NewBooleanAttribute(true))),
		change("e26", "MODIFY", edited, withAttr(withAttr(edited, "tsk", m(nil)), "group", events.NewListAttribute(nil))),
		record("e27", "REMOVE", withAttr(withAttr(edited, "spk", events.NewStringSetAttribute([]string{"x"})), "ssk", events.NewBinaryAttribute([]byte("x")))),
		// Another program's thread of a type the Stores cannot decode.
		change("e28", "INSERT", nil, withAttr(messageImage("ann", "users", "", false), "thread", m(nil))),
		// A ledger attribute that is NULL (none), or a number (no entry).
		record("e29", "REMOVE", withAttr(receiptImage("ann", "ops"), driver.LedgerAttribute, events.NewNullAttribute())),
		change("e30", "MODIFY", edited, withAttr(edited, driver.LedgerAttribute, n("7"))),
		// Keys' attributes and a receipt's group, a number or NULL.
		record("e31", "REMOVE", withAttr(withAttr(messageImage("ann", "users", "", true), "uid", events.NewNullAttribute()), "tenant_key", n("7"))),
		change("e32", "MODIFY", receipt, withAttr(withAttr(receipt, "group", n("7")), "archivedat", n("1700000055"))),
		// An aggregated message's item (Draft.Aggregate), as the library
		// writes it and as another program might.
		change("e33", "INSERT", nil, withAttr(withAttr(edited, "thread", s("post-1")), driver.AggregateAttribute, m(map[string]events.DynamoDBAttributeValue{
			"n": n("3"), "s": events.NewListAttribute([]events.DynamoDBAttributeValue{s("bob"), s("carol")}), "m": events.NewListAttribute([]events.DynamoDBAttributeValue{s("01ARZ3NDEKTSV4RRFFQ69G5FAV")}), "f": s("01ARZ3NDEKTSV4RRFFQ69G5FAV")}))),
		change("e34", "INSERT", nil, withAttr(withAttr(edited, "thread", s("post-1")), driver.AggregateAttribute, m(map[string]events.DynamoDBAttributeValue{
			"n": n("1e30"), "s": events.NewListAttribute([]events.DynamoDBAttributeValue{n("1")}), "m": s("x"), "f": n("2")}))),
		record("e35", "REMOVE", withAttr(withAttr(edited, "thread", s("post-1")), driver.AggregateAttribute, s("x"))),
		change("e36", "INSERT", nil, withAttr(withAttr(edited, "thread", s("post-1")), driver.AggregateAttribute, m(map[string]events.DynamoDBAttributeValue{
			"n": n("-2"), "s": events.NewListAttribute([]events.DynamoDBAttributeValue{s("a#b"), s("a#b")})}))),
	} {
		b, err := json.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r events.DynamoDBEventRecord
		if json.Unmarshal(b, &r) != nil {
			return
		}
		if bare, ok := withoutBadTimes(r); ok {
			failedWith, eventsWith := handledAlone(t, r)
			failedBare, eventsBare := handledAlone(t, bare)
			if !cmp.Equal(failedWith, failedBare) || !cmp.Equal(eventsWith, eventsBare) {
				t.Fatalf("a time attribute that holds no time changed the outcome: failed %v, events %v; without it, failed %v, events %v", failedWith, eventsWith, failedBare, eventsBare)
			}
		}
		if bare, ok := withoutBadCounted(r); ok {
			failedWith, eventsWith := handledAlone(t, r)
			failedBare, eventsBare := handledAlone(t, bare)
			if !cmp.Equal(failedWith, failedBare) || !cmp.Equal(eventsWith, eventsBare) {
				t.Fatalf("a counted of no marks changed the outcome: failed %v, events %v; without it, failed %v, events %v", failedWith, eventsWith, failedBare, eventsBare)
			}
		}
		st := &partitionStore{Store: memstore.New()}
		log := &eventLog{}
		ib := inbox.New(st, inbox.WithEvents(log.handle))
		if _, err := ib.StreamHandler(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{r}}); err != nil {
			t.Fatalf("StreamHandler returned an error: %v", err)
		}
		var parts []inbox.Partition
		parts = append(parts, st.parts...)
		for _, e := range log.take() {
			parts = append(parts, e.Partition)
		}
		if len(parts) == 0 {
			return
		}
		var pk string
		for _, v := range r.Change.Keys {
			if !strings.HasPrefix(v.String(), driver.MessagePrefix) && v.String() != driver.SeenSK && v.String() != driver.PreferencesSK {
				pk = v.String()
			}
		}
		for _, p := range parts {
			if p.PK() != pk {
				t.Fatalf("record with key %q touched partition %s", pk, p.PK())
			}
		}
	})
}

// handledAlone hands r alone to the handler of a fresh Inbox with events
// on, and returns the failed sequence numbers and the events.
func handledAlone(t *testing.T, r events.DynamoDBEventRecord) ([]events.DynamoDBBatchItemFailure, []inbox.Event) {
	log := &eventLog{}
	ib := inbox.New(memstore.New(), inbox.WithEvents(log.handle))
	resp, err := ib.StreamHandler(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{r}})
	if err != nil {
		t.Fatalf("StreamHandler returned an error: %v", err)
	}
	return resp.BatchItemFailures, log.take()
}

// withoutBadTimes returns r with the time attributes of its images that
// hold no time (driver.ParseTimeAttr; for the TTL attribute, none that is
// not a number) left out, the headers' too: ok is false if there is none.
func withoutBadTimes(r events.DynamoDBEventRecord) (_ events.DynamoDBEventRecord, ok bool) {
	none := func(v events.DynamoDBAttributeValue) bool {
		if v.DataType() != events.DataTypeNumber {
			return true
		}
		_, holds := driver.ParseTimeAttr(v.Number())
		return !holds
	}
	strip := func(img map[string]events.DynamoDBAttributeValue) map[string]events.DynamoDBAttributeValue {
		out := maps.Clone(img)
		for _, attr := range []string{"readat", "archivedat", "interactedat", "deletedat", "snoozeduntil", "deliverat", "received", "delivered"} {
			if v, has := out[attr]; has && none(v) {
				delete(out, attr)
				ok = true
			}
		}
		if v, has := out[driver.TTLAttribute]; has && v.DataType() != events.DataTypeNumber {
			delete(out, driver.TTLAttribute)
			ok = true
		}
		if h, has := out["headers"]; has && h.DataType() == events.DataTypeMap {
			hm := maps.Clone(h.Map())
			for _, attr := range []string{"received", "delivered"} {
				if v, has := hm[attr]; has && none(v) {
					delete(hm, attr)
					ok = true
				}
			}
			out["headers"] = events.NewMapAttribute(hm)
		}
		return out
	}
	if r.Change.OldImage != nil {
		r.Change.OldImage = strip(r.Change.OldImage)
	}
	if r.Change.NewImage != nil {
		r.Change.NewImage = strip(r.Change.NewImage)
	}
	return r, ok
}

// withoutBadCounted returns r with its images' counted attributes left
// out, if it has one and each is no set of marks, of a message or a
// receipt (not a number, not a whole number of a byte, or a byte of no
// marks), beside other attributes: ok is false otherwise.
func withoutBadCounted(r events.DynamoDBEventRecord) (_ events.DynamoDBEventRecord, ok bool) {
	bad := func(v events.DynamoDBAttributeValue) bool {
		if v.DataType() != events.DataTypeNumber {
			return true
		}
		return driver.ParseCountedAttr(v.Number(), false) == 0 && driver.ParseCountedAttr(v.Number(), true) == 0
	}
	strip := func(img map[string]events.DynamoDBAttributeValue) map[string]events.DynamoDBAttributeValue {
		v, has := img[driver.CountedAttribute]
		if !has {
			return img
		}
		if !bad(v) || len(img) == 1 {
			return nil // a set of marks, or an image of counted alone
		}
		ok = true
		out := maps.Clone(img)
		delete(out, driver.CountedAttribute)
		return out
	}
	before, after := strip(r.Change.OldImage), strip(r.Change.NewImage)
	if before == nil && r.Change.OldImage != nil || after == nil && r.Change.NewImage != nil {
		return r, false
	}
	r.Change.OldImage, r.Change.NewImage = before, after
	return r, ok
}
