package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// TestBucketCategoryAttrs: a broadcast's category counts in attributes of
// its bucket items named after it (h<hour>#<category> on the day's,
// s<second>#<category> on the hour's), a category with '.' and '[1]' by
// its very name. Attributes another program wrote there that the Store
// does not name (a sign, an hour out of range, an empty category, a
// category that is no key) are not read; a count of another type than a
// number is an error of the read, not a panic.
func TestBucketCategoryAttrs(t *testing.T) {
	ctx := context.Background()
	store, raw, table := newLocalStore(t)
	now := time.Now().UTC().Truncate(time.Second)
	ib := inbox.New(store, inbox.WithClock(func() time.Time { return now }), inbox.WithSharedCache(0))
	scope := driver.Scope{Tenant: "acme", Inbox: "alerts"}
	p := scope.Public()
	var ids []string
	for _, c := range []string{"billing", "a.b[1]", ""} {
		b, err := ib.Broadcast(ctx, scope, inbox.Draft{Title: "t", Category: c})
		if err != nil {
			t.Fatalf("Broadcast(%q): %v", c, err)
		}
		ids = append(ids, b.ID)
	}
	bt, err := driver.BucketTime(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	daySK, hourSK := driver.DayBucketSK(bt), driver.HourBucketSK(bt)
	day := shapeMap(getRaw(t, raw, table, p.PK(), daySK), true)
	hh := fmt.Sprintf("h%02d", bt.Hour())
	for _, c := range []string{"billing", "a.b[1]"} {
		if day[hh+"#"+c] != "N:1" {
			t.Errorf("day bucket %v: want %s#%s 1", day, hh, c)
		}
	}
	if day[hh] != "N:3" || len(day) != 10 {
		t.Errorf("day bucket %v: want %s 3, the two categories', a version and the keys", day, hh)
	}
	// The hour item names a category's counts by its tag, c#<tag> holding
	// the category.
	hour := shapeMap(getRaw(t, raw, table, p.PK(), hourSK), true)
	tags := map[string]string{}
	for name, v := range hour {
		if tag, ok := strings.CutPrefix(name, "c#"); ok {
			tags[strings.TrimPrefix(fmt.Sprint(v), "S:")] = tag
		}
	}
	for i, c := range []string{"billing", "a.b[1]"} {
		st, _ := driver.BucketTime(ids[i])
		tag := tags[c]
		if s := fmt.Sprintf("s%04d#%s", int(st.Sub(driver.HourOf(st))/time.Second), tag); tag == "" || len(tag) != 9 || hour[s] != "N:1" {
			t.Errorf("hour bucket %v: want %s 1, %q the tag of %q", hour, s, tag, c)
		}
	}

	stats := func() (driver.Stats, *driver.HourBucket, error, error) {
		t.Helper()
		st, err := store.Stats(ctx, driver.StatsQuery{Partition: p, Now: now})
		hs, herr := store.Stats(ctx, driver.StatsQuery{Partition: p, Hour: bt})
		return st, hs.Hour, err, herr
	}
	before, hb, err, herr := stats()
	if err != nil || herr != nil || hb == nil || len(before.Days) != 1 || before.Days[0].Categories["billing"][bt.Hour()] != 1 || before.Days[0].Categories["a.b[1]"][bt.Hour()] != 1 || len(hb.Categories) != 2 {
		t.Fatalf("Stats: %+v, %+v, %v, %v; want the day's and the hour's counts of both categories", before.Days, hb, err, herr)
	}
	set := func(sk, name string, v types.AttributeValue) { t.Helper(); setNamed(t, raw, table, p, sk, name, v) }
	remove := func(sk, name string) { t.Helper(); setNamed(t, raw, table, p, sk, name, nil) }
	one := &types.AttributeValueMemberN{Value: "1"}
	for _, name := range []string{"h24#billing", "h+1#billing", hh + "#", hh + "#a#b", hh + "#a*b", hh + "x", "h0#billing"} {
		set(daySK, name, one)
	}
	for _, name := range []string{"s3600#billing", "s+123", "s0001#", "s0001#a#b", "s01#billing"} {
		set(hourSK, name, one)
	}
	after, hb2, err, herr := stats()
	if err != nil || herr != nil {
		t.Fatalf("Stats with attributes the Store does not name: %v, %v", err, herr)
	}
	if diff := cmp.Diff(before.Days, after.Days); diff != "" {
		t.Errorf("day buckets with attributes the Store does not name (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(hb, hb2); diff != "" {
		t.Errorf("hour bucket with attributes the Store does not name (-before +after):\n%s", diff)
	}

	// A count under a tag the item holds no category of.
	set(hourSK, "s0001#~AAAAAAAA", one)
	if _, _, _, herr := stats(); !errors.Is(herr, driver.ErrInvalidInput) {
		t.Errorf("Stats of an hour with a count of an unknown tag: %v; want ErrInvalidInput", herr)
	}
	set(hourSK, "c#~AAAAAAAA", &types.AttributeValueMemberS{Value: "billing"}) // not billing's tag
	if _, _, _, herr := stats(); !errors.Is(herr, driver.ErrInvalidInput) {
		t.Errorf("Stats of an hour whose tag holds another category: %v; want ErrInvalidInput", herr)
	}
	remove(hourSK, "s0001#~AAAAAAAA")

	set(daySK, hh+"#billing", &types.AttributeValueMemberS{Value: "1"})
	set(hourSK, fmt.Sprintf("s%04d#%s", int(bt.Sub(driver.HourOf(bt))/time.Second), tags["billing"]), &types.AttributeValueMemberBOOL{Value: true})
	if _, _, err, herr := stats(); err == nil || herr == nil {
		t.Errorf("Stats with a category's count not a number: %v, %v; want errors", err, herr)
	}
}

// TestBucketThreadAttrs: a group message's thread counts, by thread and
// category, in attributes of its bucket items named by the pair's tag
// (h<hour>@<tag> on the day's, s<second>@<tag> on the hour's), each item
// holding the pair as t#<tag>. A count under a tag whose pair the item
// does not hold, holds under another tag, or holds as no thread's and
// category's, is an error of the read; a name the Store does not write
// (no '~' before the tag, a tag that is no key) is not read.
func TestBucketThreadAttrs(t *testing.T) {
	ctx := context.Background()
	store, raw, table := newLocalStore(t)
	now := time.Now().UTC().Truncate(time.Second)
	ib := inbox.New(store, inbox.WithClock(func() time.Time { return now }), inbox.WithSharedCache(0))
	scope := driver.Scope{Tenant: "acme", Inbox: "chat"}
	p := driver.Partition{Tenant: "acme", Inbox: "chat", Group: "team"}
	var ids []string
	for _, c := range []string{"billing", ""} {
		m, err := ib.BroadcastGroup(ctx, scope, "team", inbox.Draft{Sender: "ann", Title: "t", Category: c, Thread: "a.b[1]"})
		if err != nil {
			t.Fatalf("BroadcastGroup(%q): %v", c, err)
		}
		ids = append(ids, m.ID)
	}
	bt, err := driver.BucketTime(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	daySK, hourSK := driver.DayBucketSK(bt), driver.HourBucketSK(bt)
	hh := fmt.Sprintf("h%02d", bt.Hour())
	pairs := []driver.Slice{{Thread: "a.b[1]", Category: "billing"}, {Thread: "a.b[1]"}}
	for _, sk := range []string{daySK, hourSK} {
		item := shapeMap(getRaw(t, raw, table, p.PK(), sk), true)
		tags := map[string]string{}
		for name, v := range item {
			if tag, ok := strings.CutPrefix(name, "t#"); ok {
				tags[strings.TrimPrefix(fmt.Sprint(v), "S:")] = tag
			}
		}
		for i, k := range pairs {
			tag := tags[k.String()]
			count := hh + "@" + tag
			if sk == hourSK {
				st, _ := driver.BucketTime(ids[i])
				count = fmt.Sprintf("s%04d@%s", int(st.Sub(driver.HourOf(st))/time.Second), tag)
			}
			if len(tag) != 9 || tag[0] != '~' || item[count] != "N:1" {
				t.Errorf("bucket %s %v: want %s 1, %q the tag of %v", sk, item, count, tag, k)
			}
		}
		if len(tags) != 2 {
			t.Errorf("bucket %s %v: want the two pairs, held once each", sk, item)
		}
	}

	stats := func() (driver.Stats, *driver.HourBucket, error, error) {
		t.Helper()
		st, err := store.Stats(ctx, driver.StatsQuery{Partition: p, Now: now})
		hs, herr := store.Stats(ctx, driver.StatsQuery{Partition: p, Hour: bt})
		return st, hs.Hour, err, herr
	}
	before, hb, err, herr := stats()
	if err != nil || herr != nil || hb == nil || len(before.Days) != 1 || len(before.Days[0].Threads) != 2 || len(hb.Threads) != 2 {
		t.Fatalf("Stats: %+v, %+v, %v, %v; want the day's and the hour's counts of both pairs", before.Days, hb, err, herr)
	}
	for _, k := range pairs {
		if before.Days[0].Threads[k][bt.Hour()] != 1 {
			t.Errorf("day bucket %+v: want 1 of %v in hour %d", before.Days[0], k, bt.Hour())
		}
	}
	set := func(sk, name string, v types.AttributeValue) { t.Helper(); setNamed(t, raw, table, p, sk, name, v) }
	remove := func(sk, name string) { t.Helper(); setNamed(t, raw, table, p, sk, name, nil) }
	one := &types.AttributeValueMemberN{Value: "1"}
	for _, name := range []string{hh + "@AAAAAAAA", hh + "@~a#b", hh + "@", "h24@~AAAAAAAA"} {
		set(daySK, name, one)
	}
	for _, name := range []string{"s0001@AAAAAAAA", "s0001@", "s3600@~AAAAAAAA"} {
		set(hourSK, name, one)
	}
	set(daySK, "t#~BBBBBBBB", &types.AttributeValueMemberS{Value: "x#y"}) // a pair without counts
	after, hb2, err, herr := stats()
	if err != nil || herr != nil {
		t.Fatalf("Stats with attributes the Store does not name: %v, %v", err, herr)
	}
	if diff := cmp.Diff(before.Days, after.Days); diff != "" {
		t.Errorf("day buckets with attributes the Store does not name (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(hb, hb2); diff != "" {
		t.Errorf("hour bucket with attributes the Store does not name (-before +after):\n%s", diff)
	}

	// A count under a tag whose pair is missing, another's, or no pair.
	for _, pair := range []string{"", "a.b[1]#billing", "a#b#c", "#billing", "a.b[1]"} {
		for _, sk := range []string{daySK, hourSK} {
			count := hh + "@~AAAAAAAA"
			if sk == hourSK {
				count = "s0001@~AAAAAAAA"
			}
			set(sk, count, one)
			if pair != "" {
				set(sk, "t#~AAAAAAAA", &types.AttributeValueMemberS{Value: pair})
			}
			_, _, err, herr := stats()
			if got := map[string]error{daySK: err, hourSK: herr}[sk]; !errors.Is(got, driver.ErrInvalidInput) {
				t.Errorf("Stats of %s with a count of tag ~AAAAAAAA, its pair %q: %v; want ErrInvalidInput", sk, pair, got)
			}
			remove(sk, count)
			remove(sk, "t#~AAAAAAAA")
		}
	}
	if after, hb2, err, herr := stats(); err != nil || herr != nil || !cmp.Equal(before.Days, after.Days) || !cmp.Equal(hb, hb2) {
		t.Errorf("Stats once the counts of no pair are gone: %+v, %+v, %v, %v; want them as before", after.Days, hb2, err, herr)
	}
}
