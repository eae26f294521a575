package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
)

var scope = inbox.Scope{Tenant: "acme", Inbox: "alerts"}

// The message ID of the hand-built images.
const imageID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"

// s, n and m build stream attribute values in the shape DynamoDB sends.
func s(v string) events.DynamoDBAttributeValue { return events.NewStringAttribute(v) }
func n(v string) events.DynamoDBAttributeValue { return events.NewNumberAttribute(v) }
func m(kv map[string]events.DynamoDBAttributeValue) events.DynamoDBAttributeValue {
	return events.NewMapAttribute(kv)
}

// keys returns the stream keys of message id in partition pk.
func keys(pk, id string) map[string]events.DynamoDBAttributeValue {
	return map[string]events.DynamoDBAttributeValue{"pk": s(pk), "sk": s("m#" + id)}
}

// userPK returns user's partition key in scope.
func userPK(user string) string { return partitionOf(user).PK() }

// messageImage is the old image of a message item written by another
// program as seeds 000/001 lay it out (headers nested, no ledger entry).
func messageImage(user, audience, category string, read bool) map[string]events.DynamoDBAttributeValue {
	img := map[string]events.DynamoDBAttributeValue{
		"pk":   s(userPK(user)),
		"sk":   s("m#" + imageID),
		"kind": s("UM"),
		"headers": m(map[string]events.DynamoDBAttributeValue{
			"id":             s(imageID),
			"host_system_id": events.NewNullAttribute(),
			"sender":         s("ops"),
			"audiences":      m(map[string]events.DynamoDBAttributeValue{"kind": s(audience), "label": s("")}),
			"received":       n("1700000000"),
			"delivered":      n("1700000000"),
		}),
		"message":    m(map[string]events.DynamoDBAttributeValue{"title": s("hi"), "body": s("b"), "cta_uri": events.NewNullAttribute()}),
		"expiredat":  n("1700000100"),
		"tenant_key": s("acme"),
		"inbox_key":  s("alerts"),
		"uid":        s(user),
	}
	if category != "" {
		img["taxonomy"] = m(map[string]events.DynamoDBAttributeValue{"category": s(category)})
	}
	if read {
		img["readat"] = n("1700000050")
	}
	return img
}

// flatImage is the old image of a message in seed 000's layout: id,
// sender, audiences and the times at the top level, readat null.
func flatImage(user, category string) map[string]events.DynamoDBAttributeValue {
	return map[string]events.DynamoDBAttributeValue{
		"pk": s(userPK(user)), "sk": s("m#" + imageID), "kind": s("UM"),
		"id": s(imageID), "host_system_id": events.NewNullAttribute(), "sender": s("ops"),
		"audiences": m(map[string]events.DynamoDBAttributeValue{"kind": s("users"), "label": s(""), "uids": events.NewListAttribute([]events.DynamoDBAttributeValue{s(user)})}),
		"received":  n("1700000000"), "delivered": n("1700000000"), "readat": events.NewNullAttribute(),
		"taxonomy":  m(map[string]events.DynamoDBAttributeValue{"category": s(category)}),
		"message":   m(map[string]events.DynamoDBAttributeValue{"title": s("hi"), "body": s("b")}),
		"expiredat": n("1700000100"), "tenant_key": s("acme"), "inbox_key": s("alerts"), "uid": s(user),
	}
}

// receiptImage is the old image of a read receipt: no headers.
func receiptImage(user, category string) map[string]events.DynamoDBAttributeValue {
	img := map[string]events.DynamoDBAttributeValue{
		"pk": s(userPK(user)), "sk": s("m#" + imageID),
		"kind": s("UM"), "readat": n("1700000050"), "expiredat": n("1700000100"),
		"tenant_key": s("acme"), "inbox_key": s("alerts"), "uid": s(user),
	}
	if category != "" {
		img["taxonomy"] = m(map[string]events.DynamoDBAttributeValue{"category": s(category)})
	}
	return img
}

// record returns a stream record of event name on the item at keys of
// image old, as Lambda delivers it (a REMOVE has no new image).
func record(id, name string, old map[string]events.DynamoDBAttributeValue) events.DynamoDBEventRecord {
	r := events.DynamoDBEventRecord{
		EventID:   id,
		EventName: name,
		Change: events.DynamoDBStreamRecord{
			OldImage:       old,
			SequenceNumber: "seq-" + id,
			StreamViewType: "NEW_AND_OLD_IMAGES",
		},
		UserIdentity: &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"},
	}
	if old != nil {
		r.Change.Keys = map[string]events.DynamoDBAttributeValue{"pk": old["pk"], "sk": old["sk"]}
	}
	return r
}

// counters returns every counter of the given users' partitions (ann and
// the public partition by default), sorted.
func counters(t *testing.T, st inbox.Store, users ...string) []driver.Counter {
	t.Helper()
	if len(users) == 0 {
		users = []string{"ann", inbox.PublicGroup}
	}
	var all []driver.Counter
	for _, u := range users {
		p := partitionOf(u)
		st, err := st.Stats(context.Background(), driver.StatsQuery{Partition: p, Now: time.Time{}})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, st.Counters...)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Partition != all[j].Partition {
			return all[i].Partition.PK() < all[j].Partition.PK()
		}
		return driver.CounterSK(all[i].Category, all[i].Group) < driver.CounterSK(all[j].Category, all[j].Group)
	})
	return all
}

// partitionOf returns the partition of user u of acme/alerts, or of group
// u with a "G:" prefix, or the public one for PublicGroup.
func partitionOf(u string) inbox.Partition {
	p := inbox.Partition{Tenant: "acme", Inbox: "alerts", User: u}
	if g, ok := strings.CutPrefix(u, "G:"); ok {
		p.User, p.Group = "", g
	} else if u == inbox.PublicGroup {
		p.User, p.Group = "", u
	}
	return p
}

// handle runs the handler on records and returns the failed sequence
// numbers.
func handle(t *testing.T, ib *inbox.Inbox, recs ...events.DynamoDBEventRecord) []string {
	t.Helper()
	resp, err := ib.StreamHandler(context.Background(), events.DynamoDBEvent{Records: recs})
	if err != nil {
		t.Fatalf("StreamHandler returned an error: %v", err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	return failed
}

// TestStreamHandlerAccounting: removals of items another program wrote (no
// ledger entry) are accounted by the seed's rules, once per event ID;
// other records are ignored.
func TestStreamHandlerAccounting(t *testing.T) {
	ann := inbox.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	pub := inbox.Partition{Tenant: "acme", Inbox: "alerts", Group: inbox.PublicGroup}
	tests := []struct {
		name string
		rec  events.DynamoDBEventRecord
		want []driver.Counter
	}{
		{"unread user message", record("e1", "REMOVE", messageImage("ann", "users", "billing", false)), []driver.Counter{
			{Partition: ann, Published: -1}, {Partition: ann, Category: "billing", Published: -1}}},
		{"read user message", record("e2", "REMOVE", messageImage("ann", "users", "billing", true)), []driver.Counter{
			{Partition: ann, Published: -1, Read: -1}, {Partition: ann, Category: "billing", Published: -1, Read: -1}}},
		{"uncategorised message", record("e3", "REMOVE", messageImage("ann", "users", "", true)), []driver.Counter{
			{Partition: ann, Published: -1, Read: -1}}},
		{"receipt", record("e4", "REMOVE", receiptImage("ann", "news")), []driver.Counter{
			{Partition: ann, Read: -1}, {Partition: ann, Category: "news", Read: -1}}},
		{"public message", record("e5", "REMOVE", messageImage(inbox.PublicGroup, "everyone", "news", false)), []driver.Counter{
			{Partition: pub, Published: -1}, {Partition: pub, Category: "news", Published: -1}}},
		{"seed 000 flat message, readat null", record("e6", "REMOVE", flatImage("ann", "news")), []driver.Counter{
			{Partition: ann, Published: -1}, {Partition: ann, Category: "news", Published: -1}}},
		{"stats item", record("e7", "REMOVE", map[string]events.DynamoDBAttributeValue{
			"pk": s(userPK("ann")), "sk": s("c#*"), "kind": s("US"), "published": n("3")}), nil},
		{"tenant settings", record("e8", "REMOVE", map[string]events.DynamoDBAttributeValue{"pk": s("t#acme"), "sk": s("st#tenant_settings"), "kind": s("TS"), "ttl": s("30d")}), nil},
		{"insert", record("e9", "INSERT", messageImage("ann", "users", "billing", true)), nil},
		{"modify", record("e10", "MODIFY", messageImage("ann", "users", "billing", true)), nil},
		// Another program's message is in no thread, whatever its thread
		// attribute holds: the Stores ignore it, so its removal counts out
		// as the seeds count it.
		{"foreign message, thread not a key", record("e12", "REMOVE", withAttr(messageImage("ann", "users", "", true), "thread", s("a#b"))), []driver.Counter{
			{Partition: ann, Published: -1, Read: -1}}},
		{"foreign message, thread a number", record("e13", "REMOVE", withAttr(messageImage("ann", "users", "", true), "thread", n("7"))), []driver.Counter{
			{Partition: ann, Published: -1, Read: -1}}},
		{"foreign message, thread a map", record("e14", "REMOVE", withAttr(messageImage("ann", "users", "", true), "thread", m(nil))), []driver.Counter{
			{Partition: ann, Published: -1, Read: -1}}},
		// A ledger attribute that is NULL is none, as the Stores read it;
		// one of a type they refuse (a number, which names no entry)
		// reads as none in an old image, as the other attributes the
		// Stores refuse: the removal of such an item is accounted as the
		// seeds count it.
		{"foreign message, ledger NULL", record("e15", "REMOVE", withAttr(messageImage("ann", "users", "", true), driver.LedgerAttribute, events.NewNullAttribute())), []driver.Counter{
			{Partition: ann, Published: -1, Read: -1}}},
		{"foreign receipt, ledger NULL", record("e16", "REMOVE", withAttr(receiptImage("ann", ""), driver.LedgerAttribute, events.NewNullAttribute())), []driver.Counter{
			{Partition: ann, Read: -1}}},
		{"foreign message, ledger a number", record("e17", "REMOVE", withAttr(messageImage("ann", "users", "", true), driver.LedgerAttribute, n("7"))), []driver.Counter{
			{Partition: ann, Published: -1, Read: -1}}},
		{"foreign message, ledger a map", record("e18", "REMOVE", withAttr(messageImage("ann", "users", "", true), driver.LedgerAttribute, m(nil))), []driver.Counter{
			{Partition: ann, Published: -1, Read: -1}}},
		{"manual delete, no user identity", func() events.DynamoDBEventRecord {
			r := record("e11", "REMOVE", messageImage("ann", "users", "", false))
			r.UserIdentity = nil
			return r
		}(), []driver.Counter{{Partition: ann, Published: -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := memstore.New()
			ib := inbox.New(st)
			if failed := handle(t, ib, tt.rec); failed != nil {
				t.Fatalf("failed records %v", failed)
			}
			if diff := cmp.Diff(tt.want, counters(t, st)); diff != "" {
				t.Errorf("counters (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStreamHandlerKeyAttributesAsTheStoresRead: an item's tenant_key,
// inbox_key and uid, and a receipt's group, read as the Stores read them:
// a number as its decimal, NULL as none. So the removal of another
// program's message whose uid is NULL, or whose keys' attributes are
// numbers, in a partition whose keys are those numbers, and of a receipt
// whose group is a number or NULL, is accounted as the seeds count it;
// one whose number names another user than its key fails. An attribute
// of a type the Stores refuse reads as none in a REMOVE's old image, so
// the removal is accounted, and fails a new image with events on.
func TestStreamHandlerKeyAttributesAsTheStoresRead(t *testing.T) {
	numbered := inbox.Partition{Tenant: "42", Inbox: "7", User: "9"}
	inNumbered := func(img map[string]events.DynamoDBAttributeValue) map[string]events.DynamoDBAttributeValue {
		img = withAttr(withAttr(withAttr(img, "pk", s(numbered.PK())), "tenant_key", n("42")), "inbox_key", n("7"))
		return withAttr(img, "uid", n("9"))
	}
	ann := partitionOf("ann")
	readBy := func(p inbox.Partition) []driver.Counter {
		return []driver.Counter{{Partition: p, Published: -1, Read: -1}}
	}
	receiptRead := []driver.Counter{{Partition: ann, Read: -1}}
	for name, c := range map[string]struct {
		img  map[string]events.DynamoDBAttributeValue
		p    inbox.Partition
		want []driver.Counter
	}{
		"uid NULL":                        {withAttr(messageImage("ann", "users", "", true), "uid", events.NewNullAttribute()), ann, readBy(ann)},
		"tenant_key NULL":                 {withAttr(messageImage("ann", "users", "", true), "tenant_key", events.NewNullAttribute()), ann, readBy(ann)},
		"inbox_key NULL":                  {withAttr(messageImage("ann", "users", "", true), "inbox_key", events.NewNullAttribute()), ann, readBy(ann)},
		"keys' attributes numbers":        {inNumbered(messageImage("ann", "users", "", true)), numbered, readBy(numbered)},
		"uid a boolean":                   {withAttr(messageImage("ann", "users", "", true), "uid", events.NewBooleanAttribute(true)), ann, readBy(ann)},
		"receipt's group a number":        {withAttr(receiptImage("ann", ""), "group", n("7")), ann, append(receiptRead, driver.Counter{Partition: ann, Group: "7", Read: -1})},
		"receipt's group NULL":            {withAttr(receiptImage("ann", ""), "group", events.NewNullAttribute()), ann, receiptRead},
		"receipt's group a map":           {withAttr(receiptImage("ann", ""), "group", m(nil)), ann, receiptRead},
		"receipt's group an empty string": {withAttr(receiptImage("ann", ""), "group", s("")), ann, receiptRead},
	} {
		t.Run(name, func(t *testing.T) {
			st := memstore.New()
			if failed := handle(t, inbox.New(st), record("k-"+name, "REMOVE", c.img)); failed != nil {
				t.Fatalf("failed records %v", failed)
			}
			got, err := st.Stats(context.Background(), driver.StatsQuery{Partition: c.p})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got.Counters); diff != "" {
				t.Errorf("counters (-want +got):\n%s", diff)
			}
		})
	}
	for name, img := range map[string]map[string]events.DynamoDBAttributeValue{
		"uid a number of another user":   withAttr(messageImage("ann", "users", "", true), "uid", n("9")),
		"tenant_key a number of another": withAttr(inNumbered(messageImage("ann", "users", "", true)), "pk", s(userPK("ann"))),
	} {
		if failed := handle(t, inbox.New(memstore.New()), record("kx-"+name, "REMOVE", img)); len(failed) != 1 {
			t.Errorf("%s: failed records %v, want the one", name, failed)
		}
	}
	// With events on, a new image of a type the Stores refuse fails; a
	// number that names the key's, and NULL, make the event.
	for name, c := range map[string]struct {
		img  map[string]events.DynamoDBAttributeValue
		fail bool
	}{
		"uid NULL":                 {withAttr(messageImage("ann", "users", "", false), "uid", events.NewNullAttribute()), false},
		"keys' attributes numbers": {inNumbered(messageImage("ann", "users", "", false)), false},
		"uid a boolean":            {withAttr(messageImage("ann", "users", "", false), "uid", events.NewBooleanAttribute(true)), true},
		"receipt's group a number": {withAttr(withAttr(receiptImage("ann", ""), "group", n("7")), "readat", n("1700000060")), false},
		"receipt's group a map":    {withAttr(receiptImage("ann", ""), "group", m(nil)), true},
	} {
		rec := change("kn-"+name, "INSERT", nil, c.img)
		if g, ok := c.img["group"]; ok && !c.fail {
			rec = change("kn-"+name, "MODIFY", withAttr(withAttr(receiptImage("ann", ""), "group", g), "readat", events.NewNullAttribute()), c.img)
		}
		failed, evs := handledAlone(t, rec)
		switch {
		case c.fail && (len(failed) != 1 || len(evs) != 0):
			t.Errorf("new image, %s: failures %v, events %v; want the record to fail", name, failed, evs)
		case !c.fail && (len(failed) != 0 || len(evs) != 1):
			t.Errorf("new image, %s: failures %v, events %v; want one event", name, failed, evs)
		case !c.fail && name == "receipt's group a number" && evs[0].Message.Audience.Group != "7":
			t.Errorf("new image, %s: event of group %q, want 7", name, evs[0].Message.Audience.Group)
		}
	}
}

func TestStreamHandlerRedelivery(t *testing.T) {
	st := memstore.New()
	ib := inbox.New(st)
	rec := record("once", "REMOVE", messageImage("ann", "users", "billing", true))
	for i := 0; i < 5; i++ {
		if failed := handle(t, ib, rec, rec); failed != nil {
			t.Fatalf("delivery %d: failed %v", i, failed)
		}
	}
	ann := inbox.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	want := []driver.Counter{{Partition: ann, Published: -1, Read: -1}, {Partition: ann, Category: "billing", Published: -1, Read: -1}}
	if diff := cmp.Diff(want, counters(t, st)); diff != "" {
		t.Errorf("after 10 deliveries (-want +got):\n%s", diff)
	}
}

// stored returns the record at k of st.
func stored(t *testing.T, st inbox.Store, k driver.Key) driver.Record {
	t.Helper()
	recs, err := st.GetRecords(context.Background(), []driver.Key{k})
	if err != nil || len(recs) != 1 {
		t.Fatalf("GetRecords(%v) = %v, %v", k, recs, err)
	}
	return recs[0]
}

// imageOf returns the old image of a record this library wrote, as the
// stream delivers it when DynamoDB deletes it: the image of another
// program's item, plus the ledger attribute.
func imageOf(rec driver.Record) map[string]events.DynamoDBAttributeValue {
	var img map[string]events.DynamoDBAttributeValue
	switch {
	case rec.Receipt:
		img = receiptImage(rec.Partition.User, rec.Message.Category)
	case rec.Partition.IsPublic():
		img = messageImage(inbox.PublicGroup, "everyone", rec.Message.Category, false)
	default:
		img = messageImage(rec.Partition.User, "users", rec.Message.Category, rec.Message.IsRead())
	}
	img["sk"] = s("m#" + rec.Message.ID)
	img["expiredat"] = n(itoa(rec.Message.ExpiresAt.Unix()))
	img[driver.LedgerAttribute] = s(rec.Entry)
	return img
}

// TestStreamHandlerLedger: the removal of a record with a ledger entry is
// accounted with its entry, once, whatever the event ID of a redelivery;
// a broadcast removed before it expired leaves a tombstone, after which
// its readers' receipts no longer count.
func TestStreamHandlerLedger(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	st := memstore.New(memstore.WithClock(clock), memstore.WithStreamLag())
	ib := inbox.New(st, inbox.WithClock(clock))
	ann := scope.User("ann")
	d, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "direct", Category: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "broadcast", Category: "news"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{d.Message.ID, b.ID} {
		if _, err := ib.MarkRead(ctx, ann, id); err != nil {
			t.Fatal(err)
		}
	}
	annP := inbox.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	pubP := inbox.Partition{Tenant: "acme", Inbox: "alerts", Group: inbox.PublicGroup}
	direct := stored(t, st, driver.Key{Partition: annP, ID: d.Message.ID})
	broadcast := stored(t, st, driver.Key{Partition: pubP, ID: b.ID})
	for _, r := range []driver.Record{direct, broadcast} {
		if _, err := st.Delete(ctx, r.Key()); err != nil {
			t.Fatal(err)
		}
	}
	recs := []events.DynamoDBEventRecord{record("d1", "REMOVE", imageOf(direct)), record("b1", "REMOVE", imageOf(broadcast))}
	for i := range 3 {
		recs[0].EventID, recs[1].EventID = "d"+itoa(int64(i)), "b"+itoa(int64(i)) // redeliveries, even under new IDs
		if failed := handle(t, ib, recs...); failed != nil {
			t.Fatalf("failed %v", failed)
		}
	}
	want := []driver.Counter{
		{Partition: pubP, Published: 0}, {Partition: pubP, Category: "news", Published: 0},
		// ann's receipt stands: it takes her broadcast out of her Above.
		{Partition: annP, Published: 0, Read: 1, Above: -1}, {Partition: annP, Category: "billing", Published: 0, Read: 0}, {Partition: annP, Category: "news", Read: 1, Above: -1},
	}
	if diff := cmp.Diff(want, counters(t, st, inbox.PublicGroup, "ann")); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
	// ann's receipt stands and counts in the raw read, but not in Counts.
	c, err := ib.Counts(ctx, ann)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(inbox.Counts{Categories: map[string]inbox.Tally{}}, c); diff != "" {
		t.Errorf("Counts after the broadcast's removal (-want +got):\n%s", diff)
	}
}

// TestStreamHandlerRefuses: records that are malformed, or whose item
// names another partition than its key, fail (reported for the on-failure
// destination) and change no counters of any tenant.
func TestStreamHandlerRefuses(t *testing.T) {
	with := func(img map[string]events.DynamoDBAttributeValue, k string, v events.DynamoDBAttributeValue) map[string]events.DynamoDBAttributeValue {
		img[k] = v
		return img
	}
	valid := func() map[string]events.DynamoDBAttributeValue { return messageImage("ann", "users", "billing", true) }
	// counted gives a valid image a ledger entry of its own, and v as the
	// marks that entry counts.
	counted := func(v events.DynamoDBAttributeValue) map[string]events.DynamoDBAttributeValue {
		img := with(valid(), driver.LedgerAttribute, s(driver.LedgerSK(time.Unix(1700000100, 0), imageID, "x")))
		return with(img, driver.CountedAttribute, v)
	}
	tests := []struct {
		name string
		rec  events.DynamoDBEventRecord
	}{
		{"REMOVE without an old image", record("r1", "REMOVE", nil)},
		{"tenant_key of another tenant", record("r2", "REMOVE", with(valid(), "tenant_key", s("globex")))},
		{"inbox_key of another inbox", record("r3", "REMOVE", with(valid(), "inbox_key", s("billing")))},
		{"uid of another user", record("r4", "REMOVE", with(valid(), "uid", s("bob")))},
		{"uid a number of another user", record("r5", "REMOVE", with(valid(), "uid", n("7")))},
		{"broadcast in a user's partition", record("r6", "REMOVE", messageImage("ann", "everyone", "", false))},
		{"user message in the public partition", record("r7", "REMOVE", messageImage(inbox.PublicGroup, "users", "", false))},
		{"category with #", record("r9", "REMOVE", with(valid(), "taxonomy", m(map[string]events.DynamoDBAttributeValue{"category": s("a#b")})))},
		{"ledger naming another record", record("r10", "REMOVE", with(valid(), driver.LedgerAttribute, s(driver.LedgerSK(time.Unix(1700000100, 0), "01ARZ3NDEKTSV4RRFFQ69G5FAW", "x"))))},
		{"ledger not a ledger key", record("r11", "REMOVE", with(valid(), driver.LedgerAttribute, s("e#1#2")))},
		{"no event ID", record("", "REMOVE", valid())},
		{"keys of no partition", func() events.DynamoDBEventRecord {
			r := record("r12", "REMOVE", valid())
			r.Change.Keys["pk"] = s("t#acme#x")
			return r
		}()},
		{"three keys", func() events.DynamoDBEventRecord {
			r := record("r13", "REMOVE", valid())
			r.Change.Keys["x"] = s("y")
			return r
		}()},
		{"sort key not a message", func() events.DynamoDBEventRecord {
			r := record("r14", "REMOVE", valid())
			r.Change.Keys["sk"] = s("c#*")
			return r
		}()},
		{"no keys", func() events.DynamoDBEventRecord {
			r := record("r15", "REMOVE", valid())
			r.Change.Keys = nil
			return r
		}()},
	}
	// The marks an entry counts, or 0 (unknown), fail nothing: the
	// refusals above are for what they are. Nor does what another program
	// may write there that is no set of marks of the record (a string, a
	// fraction, negative, past a byte, other bits, marks not known,
	// deleted on a message): it reads as unknown, as the Stores read it
	// (driver.ParseCountedAttr), so that the removal of a record that List
	// shows is accounted, and Counts keeps agreeing with List.
	for i, v := range []string{"0", "1", "3", "7", `"3"`, "3.5", "-3", "259", "17", "2", "9", "1e30"} {
		av := n(v)
		if str, ok := strings.CutPrefix(v, `"`); ok {
			av = s(strings.TrimSuffix(str, `"`))
		}
		if failed := handle(t, inbox.New(memstore.New()), record(fmt.Sprint("ok", i), "REMOVE", counted(av))); len(failed) != 0 {
			t.Errorf("counted %s: failed records %v, want none", v, failed)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := memstore.New()
			ib := inbox.New(st)
			if failed := handle(t, ib, tt.rec); len(failed) != 1 {
				t.Errorf("failed records %v, want the one", failed)
			}
			var globex []driver.Counter
			for _, u := range []string{"ann", "bob", inbox.PublicGroup} {
				for _, tenant := range []string{"acme", "globex"} {
					p := partitionOf(u)
					p.Tenant = tenant
					st, err := st.Stats(context.Background(), driver.StatsQuery{Partition: p, Now: time.Time{}})
					if err != nil {
						t.Fatal(err)
					}
					globex = append(globex, st.Counters...)
				}
			}
			if len(globex) != 0 {
				t.Errorf("a refused record changed counters: %+v", globex)
			}
		})
	}
}

// failingStore fails ApplyRemoval for one event ID, as a store outage
// would for one record.
type failingStore struct {
	inbox.Store
	failID string
}

var errOutage = errors.New("store unavailable")

func (f failingStore) ApplyRemoval(ctx context.Context, r driver.Removal) (bool, error) {
	if r.EventID == f.failID {
		return false, errOutage
	}
	return f.Store.ApplyRemoval(ctx, r)
}

func TestStreamHandlerPartialFailure(t *testing.T) {
	st := memstore.New()
	ib := inbox.New(failingStore{Store: st, failID: "e3"}, inbox.WithConcurrency(3))
	broken := messageImage("ann", "users", "", false)
	broken["tenant_key"] = s("globex")
	ev := []events.DynamoDBEventRecord{
		record("e1", "REMOVE", broken),
		record("e2", "REMOVE", messageImage("ann", "users", "", false)),
		record("e3", "REMOVE", messageImage("ann", "users", "", false)),
	}
	if diff := cmp.Diff([]string{"seq-e1", "seq-e3"}, handle(t, ib, ev...)); diff != "" {
		t.Errorf("failures (-want +got):\n%s", diff)
	}
	ann := inbox.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	if diff := cmp.Diff([]driver.Counter{{Partition: ann, Published: -1}}, counters(t, st)); diff != "" {
		t.Errorf("only e2 applies (-want +got):\n%s", diff)
	}
}

// TestExpiryMatchesStream checks that the in-memory store's own expiry and
// the stream handler account a removal the same way.
func TestExpiryMatchesStream(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	st := memstore.New(memstore.WithClock(clock))
	ib := inbox.New(st, inbox.WithClock(clock))
	ctx := context.Background()
	if _, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "x", Category: "billing", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	page, err := ib.List(ctx, scope.User("ann"), inbox.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ib.MarkRead(ctx, scope.User("ann"), page.Messages[0].ID); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	c, err := ib.Counts(ctx, scope.User("ann"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(inbox.Counts{Categories: map[string]inbox.Tally{}}, c); diff != "" {
		t.Errorf("counts after expiry (-want +got):\n%s", diff)
	}
	ann := inbox.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	want := []driver.Counter{{Partition: ann}, {Partition: ann, Category: "billing"}}
	if diff := cmp.Diff(want, counters(t, st)); diff != "" {
		t.Errorf("counters after expiry (-want +got):\n%s", diff)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
