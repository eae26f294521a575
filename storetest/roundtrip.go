package storetest

import (
	"fmt"
	"strings"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// roundTripTests are the RoundTrip subtests of Run: what is written is read
// back exactly, through the Store and through an Inbox.
func roundTripTests() []suiteTest {
	return []suiteTest{
		{"StoreBodies", testStoreBodies},
		{"StoreFields", testStoreFields},
		{"StoreUnicodeKeys", testStoreUnicodeKeys},
		{"InboxBodies", testInboxBodies},
		{"InboxTimes", testInboxTimes},
		{"InboxAudience", testInboxAudience},
		{"InboxUnicodeKeys", testInboxUnicodeKeys},
		{"InboxLargeBodies", testInboxLargeBodies},
	}
}

// nestedBody is a body using every JSON-like type, as encoding/json decodes
// it into an any.
func nestedBody() map[string]any {
	return map[string]any{
		"text":    "ünïcødé 🙂 日本語 \"quoted\" \\ back",
		"empty":   "",
		"number":  3.5,
		"neg":     -42.0,
		"big":     1e20,
		"small":   0.001,
		"int":     7.0,
		"yes":     true,
		"no":      false,
		"nothing": nil,
		"list":    []any{1.0, "two", nil, false, map[string]any{"deep": []any{"x"}}},
		"nested":  map[string]any{"a": map[string]any{"b": map[string]any{"c": "d"}}},
		"ключ":    "значение",
		"none":    []any{},
		"blank":   map[string]any{},
	}
}

// testStoreBodies: bodies of every JSON-like shape round-trip through
// PutMessage, GetRecords and Query.
func testStoreBodies(e *env) {
	annP := e.part("ann")
	bodies := []any{"plain text", "", nil, nestedBody(), []any{"a", 1.0, nil, []any{}}, 2.5, true, "ünïcødé 🙂"}
	var all []driver.Record
	for _, b := range bodies {
		r := e.message(annP, "", time.Hour)
		r.Message.Body = b
		e.put(r)
		all = append([]driver.Record{r}, all...)
	}
	for _, r := range all {
		e.wantRecords("GetRecords", []driver.Record{r}, e.get(r.Key()))
	}
	e.wantRecords("Query", all, e.records(annP))
}

// testStoreFields: every message field round-trips, set and empty, with
// times at whole seconds in UTC.
func testStoreFields(e *env) {
	annP, pubP := e.part("ann"), e.pub()
	full := e.message(annP, "billing", 45*24*time.Hour)
	full.Message.HostSystemID = "order#42/ünï 🙂"
	full.Message.Sender = "admin-7 ✓"
	full.Message.Audience.Label = "on-call — EU"
	full.Message.Title = "Dïsk 95% full"
	full.Message.CTAURI = "https://example.com/disks?id=7&x=ü"
	full.Message.ReceivedAt = time.Date(2001, 9, 9, 1, 46, 40, 0, time.UTC)
	e.put(full)
	e.clock.Advance(time.Hour + time.Second)
	full = e.markDirect(full)

	now := e.clock.Now()
	bare := driver.Record{Partition: annP, Message: driver.Message{
		ID:          e.newID(),
		Audience:    driver.Audience{Kind: driver.AudienceUsers, UIDs: []string{"ann"}},
		ReceivedAt:  now,
		DeliveredAt: now,
		ExpiresAt:   now.Add(driver.MaxTTL),
	}}
	bare.Entry = driver.LedgerSK(bare.Message.ExpiresAt, bare.Message.ID, "bare")
	e.put(bare)
	b := e.message(pubP, "news", time.Hour)
	b.Message.HostSystemID = "bcast-1"
	b.Message.Audience.Label = ""
	e.put(b)
	r := e.markReceipt(annP, b)

	want := []driver.Record{full, bare, r, b}
	sortRecords(want)
	e.wantRecords("GetRecords", want, e.get(keys(want...)...))
	e.wantRecords("Query(ann)", []driver.Record{r, bare, full}, e.records(annP))
	e.wantRecords("Query($public)", []driver.Record{b}, e.records(pubP))
}

// testStoreUnicodeKeys: records and counters of partitions with unicode
// keys and keys of MaxKeyLen bytes round-trip, and stay apart from their
// neighbours.
func testStoreUnicodeKeys(e *env) {
	long := strings.Repeat("ü", driver.MaxKeyLen/2) // 128 bytes of 2-byte runes
	scopes := []driver.Scope{
		{Tenant: "tenant-ü", Inbox: "收件箱"},
		{Tenant: strings.Repeat("t", driver.MaxKeyLen), Inbox: long},
		{Tenant: "tenant-ü", Inbox: "收件箱 2"},
	}
	users := []string{"用户 🙂", long, "ann"}
	cats := []string{"catégorie", strings.Repeat("c", driver.MaxKeyLen), "日本"}
	var recs []driver.Record
	for i, s := range scopes {
		p := partitionOf(e.userIn(s, users[i]))
		d := e.message(p, cats[i], time.Hour)
		e.put(d)
		b := e.message(publicOf(s), cats[i], time.Hour)
		e.put(b)
		r := e.markReceipt(p, b)
		recs = append(recs, d, b, r)
		e.wantRecords("Query("+p.User+")", []driver.Record{r, d}, e.records(p))
		e.wantRecords("Query($public)", []driver.Record{b}, e.records(publicOf(s)))
		e.wantCounters(p, counter(p, "", 1, 1), counter(p, cats[i], 1, 1))
		e.wantCounters(publicOf(s), counter(publicOf(s), "", 1, 0), counter(publicOf(s), cats[i], 1, 0))
	}
	sortRecords(recs)
	e.wantRecords("GetRecords", recs, e.get(keys(recs...)...))
}

// testInboxBodies: a body published through the Inbox comes back as
// encoding/json would decode it into an any.
func testInboxBodies(e *env) {
	type point struct {
		X, Y int
		Tag  string `json:"tag"`
	}
	cases := []struct {
		in, want any
	}{
		{"plain ünïcødé 🙂", "plain ünïcødé 🙂"},
		{"", ""},
		{nil, nil},
		{nestedBody(), nestedBody()},
		{map[string]any{"n": 1, "list": []string{"a", "b"}, "p": point{1, 2, "t"}}, map[string]any{"n": 1.0, "list": []any{"a", "b"}, "p": map[string]any{"X": 1.0, "Y": 2.0, "tag": "t"}}},
		{[]int{1, 2, 3}, []any{1.0, 2.0, 3.0}},
		{42, 42.0},
		{false, false},
	}
	ann := e.user("ann")
	var want []driver.Message
	for _, c := range cases {
		res := e.publish(inbox.Draft{Title: "body", Body: c.in}, "ann")
		m := res.Message
		m.Body = c.want
		want = append([]driver.Message{m}, want...)
	}
	b := e.broadcast(inbox.Draft{Title: "broadcast body", Body: nestedBody()})
	b.Body = nestedBody()
	want = append([]driver.Message{b}, want...)
	e.wantFeed(ann, inbox.ListOptions{}, want...)
}

// testInboxTimes: the Inbox stores times at whole seconds in UTC: a
// ReceivedAt with nanoseconds in another zone, and a clock between seconds.
func testInboxTimes(e *env) {
	ann := e.user("ann")
	e.clock.Advance(1500 * time.Millisecond)
	now := startTime().Add(time.Second) // the clock, truncated
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	received := time.Date(2099, 12, 31, 23, 0, 7, 999_999_999, zone)
	res := e.publish(inbox.Draft{Title: "t", ReceivedAt: received, TTL: 90 * time.Minute}, "ann")
	m := res.Message
	for _, c := range []struct {
		name      string
		got, want time.Time
	}{
		{"ReceivedAt", m.ReceivedAt, time.Date(2099, 12, 31, 17, 30, 7, 0, time.UTC)},
		{"DeliveredAt", m.DeliveredAt, now},
		{"ExpiresAt", m.ExpiresAt, now.Add(90 * time.Minute)},
	} {
		if !c.got.Equal(c.want) || c.got.Location() != time.UTC {
			e.t.Errorf("published %s = %v, want %v", c.name, c.got, c.want)
		}
	}
	def := e.publish(inbox.Draft{Title: "no received time"}, "ann").Message
	if !def.ReceivedAt.Equal(now) {
		e.t.Errorf("ReceivedAt of a draft without one = %v, want the clock's time %v", def.ReceivedAt, now)
	}
	e.clock.Advance(time.Minute)
	e.markRead(ann, m.ID, true)
	e.wantFeed(ann, inbox.ListOptions{}, def, read(m, now.Add(time.Minute)))
}

// testInboxAudience: each user's copy of a publish names only that user;
// a broadcast names no one; labels, senders and host IDs round-trip.
func testInboxAudience(e *env) {
	d := inbox.Draft{HostSystemID: "aud-1", Sender: "admin ✓", Label: "on-call — EU", Category: "ops", Title: "Pager", CTAURI: "https://example.com/p"}
	res := e.publish(d, "ann", "bob")
	m := res.Message
	if m.Audience.Kind != driver.AudienceUsers || m.Audience.Label != d.Label || m.HostSystemID != d.HostSystemID || m.Sender != d.Sender || m.Category != "ops" || m.Title != "Pager" || m.CTAURI != d.CTAURI {
		e.t.Errorf("published message %+v does not carry the draft %+v", m, d)
	}
	b := e.broadcast(inbox.Draft{Sender: "admin", Label: "everyone", Title: "Maintenance"})
	if b.Audience.Kind != driver.AudienceEveryone || len(b.Audience.UIDs) != 0 {
		e.t.Errorf("broadcast audience %+v, want kind everyone with no uids", b.Audience)
	}
	e.wantFeed(e.user("ann"), inbox.ListOptions{}, b, copyFor(m, "ann"))
	e.wantFeed(e.user("bob"), inbox.ListOptions{}, b, copyFor(m, "bob"))
	for _, u := range []string{"ann", "bob"} {
		recs := e.get(driver.Key{Partition: e.part(u), ID: m.ID})
		if len(recs) != 1 || len(recs[0].Message.Audience.UIDs) != 1 || recs[0].Message.Audience.UIDs[0] != u {
			e.t.Errorf("%s's stored copy: %+v, want an audience naming only %s", u, recs, u)
		}
	}
}

// testInboxUnicodeKeys: an Inbox works in scopes, users and categories with
// unicode keys and keys of MaxKeyLen bytes.
func testInboxUnicodeKeys(e *env) {
	long := strings.Repeat("界", driver.MaxKeyLen/3) + "ab" // 3-byte runes: 128 bytes
	for _, s := range []driver.Scope{{Tenant: "tenant-ü", Inbox: "收件箱"}, {Tenant: long, Inbox: long}} {
		for _, user := range []string{"用户 🙂", long} {
			u := e.userIn(s, user)
			res := e.publishIn(s, inbox.Draft{Title: "ü", Category: "catégorie"}, user)
			e.markRead(u, res.Message.ID, true)
			e.wantFeed(u, inbox.ListOptions{Limit: 1, Category: "catégorie"}, read(copyFor(res.Message, user), e.clock.Now()))
			e.wantCounts(u, inbox.Counts{Tally: tallyOf(1, 1), Categories: map[string]inbox.Tally{"catégorie": tallyOf(1, 1)}})
		}
	}
}

// testInboxLargeBodies: bodies close to the item size limit, which the
// Inbox accepts, are stored and read back exactly.
func testInboxLargeBodies(e *env) {
	ann := e.user("ann")
	wide := map[string]any{}
	for i := range 5000 {
		wide[fmt.Sprintf("key-%d", i)] = []any{float64(i), "v", i%2 == 0}
	}
	var want []driver.Message
	for _, body := range []any{
		strings.Repeat("x", driver.MaxItemSize-4*1024),
		strings.Repeat("ü", (driver.MaxItemSize-4*1024)/2),
		wide,
		map[string]any{"a": map[string]any{strings.Repeat("ü", driver.MaxBodyKeyLen/2): "the longest key"}},
	} {
		res := e.publish(inbox.Draft{Title: "large", Body: body}, "ann")
		want = append([]driver.Message{copyFor(res.Message, "ann")}, want...)
	}
	e.wantFeed(ann, inbox.ListOptions{Limit: 2}, want...)
}
