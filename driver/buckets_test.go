package driver

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"
)

// idAt returns a message ID of instant t.
func idAt(t time.Time) string {
	return ulid.MustNew(ulid.Timestamp(t), zeroEntropy{}).String()
}

type zeroEntropy struct{}

func (zeroEntropy) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// bucketDay is the day of the buckets' tests.
var bucketDay = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

// at returns the instant of bucketDay plus days, h:m:s.
func at(days, h, m, s int) time.Time {
	return bucketDay.AddDate(0, 0, days).Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
}

// rec returns a record of category at t.
func rec(category string, t time.Time) Record {
	return Record{Message: Message{ID: idAt(t), Category: category}}
}

// TestBucketsCategories: Buckets counts each category's records apart,
// by hour in the day buckets and by second in the hour buckets, and the
// records without a category in the totals alone.
func TestBucketsCategories(t *testing.T) {
	recs := []Record{
		rec("a", at(0, 10, 0, 5)), rec("a", at(0, 10, 0, 5)), rec("b", at(0, 10, 0, 5)),
		rec("", at(0, 10, 59, 59)), rec("b", at(0, 11, 0, 0)), rec("a", at(1, 0, 0, 1)),
	}
	days, hours, err := Buckets(recs)
	if err != nil {
		t.Fatal(err)
	}
	var d0, d1 DayBucket
	d0.Day, d1.Day = bucketDay, bucketDay.AddDate(0, 0, 1)
	d0.Hours[10], d0.Hours[11], d1.Hours[0] = 4, 1, 1
	var a0, b0, a1 [24]int64
	a0[10], b0[10], b0[11], a1[0] = 2, 1, 1, 1
	d0.Categories = map[string][24]int64{"a": a0, "b": b0}
	d1.Categories = map[string][24]int64{"a": a1}
	wantDays := []DayBucket{d0, d1}
	wantHours := []HourBucket{
		{Hour: at(0, 10, 0, 0), Seconds: map[int]int64{5: 3, 3599: 1}, Categories: map[string]map[int]int64{"a": {5: 2}, "b": {5: 1}}},
		{Hour: at(0, 11, 0, 0), Seconds: map[int]int64{0: 1}, Categories: map[string]map[int]int64{"b": {0: 1}}},
		{Hour: at(1, 0, 0, 0), Seconds: map[int]int64{1: 1}, Categories: map[string]map[int]int64{"a": {1: 1}}},
	}
	if diff := cmp.Diff(wantDays, days); diff != "" {
		t.Errorf("day buckets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantHours, hours); diff != "" {
		t.Errorf("hour buckets (-want +got):\n%s", diff)
	}
	// Records without a category leave Categories nil.
	days, hours, err = Buckets([]Record{rec("", at(0, 3, 0, 0))})
	if err != nil || days[0].Categories != nil || hours[0].Categories != nil {
		t.Errorf("buckets of an uncategorised record: %+v, %+v, %v; want no Categories", days, hours, err)
	}
}

// TestBucketAddLeavesOutZeros: a category (and a second) whose records
// are all taken out is left out, so that buckets of the same records
// compare equal however they came to be (Categories nil when empty).
func TestBucketAddLeavesOutZeros(t *testing.T) {
	ts := at(0, 7, 30, 0)
	d := DayBucket{Day: bucketDay}
	h := HourBucket{Hour: HourOf(ts)}
	for _, c := range []string{"a", "b", "a"} {
		d.Add(ts, Slice{Category: c}, 1)
		h.Add(ts, Slice{Category: c}, 1)
	}
	d.Add(ts, Slice{Category: "b"}, -1)
	h.Add(ts, Slice{Category: "b"}, -1)
	d.Add(ts.Add(time.Second), Slice{Category: ""}, 1) // uncategorised: no category
	h.Add(ts.Add(time.Second), Slice{Category: ""}, 1)
	var a [24]int64
	a[7] = 2
	wantD := DayBucket{Day: bucketDay, Categories: map[string][24]int64{"a": a}}
	wantD.Hours[7] = 3
	wantH := HourBucket{Hour: HourOf(ts), Seconds: map[int]int64{1800: 2, 1801: 1}, Categories: map[string]map[int]int64{"a": {1800: 2}}}
	if diff := cmp.Diff(wantD, d); diff != "" {
		t.Errorf("day bucket (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantH, h); diff != "" {
		t.Errorf("hour bucket (-want +got):\n%s", diff)
	}
	for range 2 {
		d.Add(ts, Slice{Category: "a"}, -1)
		h.Add(ts, Slice{Category: "a"}, -1)
	}
	if d.Categories != nil || h.Categories != nil || len(h.Seconds) != 1 || h.Seconds[1801] != 1 || d.Hours[7] != 1 {
		t.Errorf("after every category's record left: %+v, %+v; want Categories nil, one second", d, h)
	}
	// Clone leaves zeros out and shares no map.
	c := HourBucket{Hour: h.Hour, Seconds: map[int]int64{1: 0, 2: 1}, Categories: map[string]map[int]int64{"a": {1: 0}, "b": {2: 1}}}
	got := c.Clone()
	got.Categories["b"][2] = 5
	if diff := cmp.Diff(HourBucket{Hour: h.Hour, Seconds: map[int]int64{2: 1}, Categories: map[string]map[int]int64{"b": {2: 5}}}, got); diff != "" || c.Categories["b"][2] != 1 {
		t.Errorf("Clone (-want +got):\n%s (original %v)", diff, c.Categories)
	}
	dc := DayBucket{Day: bucketDay, Categories: map[string][24]int64{"z": {}}}
	if dc.Clone().Categories != nil {
		t.Errorf("Clone of a day of a zero category kept it: %+v", dc.Clone())
	}
}

// TestCountAboveIn: the records of a category above a watermark are those
// of the category in the days after its day, the hours after its hour
// and the seconds after its second; the hour bucket is needed, and must
// agree with its day's version, only when seen's day counts records of
// the category in seen's hour.
func TestCountAboveIn(t *testing.T) {
	recs := []Record{
		rec("a", at(-1, 23, 0, 0)),                            // the day before: seen
		rec("a", at(0, 9, 0, 0)), rec("a", at(0, 10, 20, 30)), // seen (its second too)
		rec("a", at(0, 10, 20, 31)), rec("a", at(0, 11, 0, 0)), rec("a", at(1, 5, 0, 0)), // above: 3
		rec("b", at(0, 10, 5, 0)),                             // seen
		rec("b", at(0, 10, 50, 0)), rec("b", at(0, 12, 0, 0)), // above: 2
		rec("", at(0, 10, 59, 59)), rec("", at(2, 0, 0, 0)), // above: 2
		rec("c", at(0, 8, 0, 0)), rec("c", at(0, 13, 0, 0)), // above: 1, none in seen's hour
	}
	days, hours, err := Buckets(recs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range days {
		days[i].Versions[10] = 7
	}
	var hour *HourBucket
	for i := range hours {
		if hours[i].Hour.Equal(at(0, 10, 0, 0)) {
			hours[i].Version = 7
			hour = &hours[i]
		}
	}
	stale := *hour
	stale.Version = 8
	other := hours[0] // the day before's 23:00
	seen := SeenAt(at(0, 10, 20, 30))
	for _, c := range []struct {
		name     string
		hour     *HourBucket
		seen     string
		category string
		want     int64
		ok       bool
		err      error
	}{
		{"all", hour, seen, "", 8, true, nil},
		{"a: seconds, hours and days after", hour, seen, "a", 3, true, nil},
		{"b: a second after in seen's hour", hour, seen, "b", 2, true, nil},
		{"c: none in seen's hour, no hour bucket needed", nil, seen, "c", 1, true, nil},
		{"c: none in seen's hour, a stale hour bucket unused", &stale, seen, "c", 1, true, nil},
		{"absent category", nil, seen, "zzz", 0, true, nil},
		{"a without its hour bucket", nil, seen, "a", 0, false, nil},
		{"a with a stale hour bucket", &stale, seen, "a", 0, false, nil},
		{"a with another hour's bucket", &other, seen, "a", 0, false, nil},
		{"all without the hour bucket", nil, seen, "", 0, false, nil},
		{"a, seen in an earlier hour without its records", nil, SeenAt(at(0, 7, 59, 59)), "a", 5, true, nil},
		{"a, seen the day after: days after alone", nil, SeenAt(at(1, 23, 0, 0)), "a", 0, true, nil},
		{"b, seen before the day", nil, SeenAt(at(-1, 0, 0, 0)), "b", 3, true, nil},
		{"category not a key", hour, seen, "a#b", 0, false, ErrInvalidKey},
		{"seen not an ID", hour, "x", "a", 0, false, ErrInvalidKey},
	} {
		n, ok, err := CountAboveIn(days, c.hour, c.seen, Slice{Category: c.category})
		if n != c.want || ok != c.ok || !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("%s: CountAboveIn = %d, %v, %v; want %d, %v, %v", c.name, n, ok, err, c.want, c.ok, c.err)
		}
	}
	// The counts of the categories and of those without one add up to
	// the total, at every watermark.
	for _, s := range []time.Time{at(-1, 0, 0, 0), at(0, 9, 0, 0), at(0, 10, 20, 30), at(0, 10, 59, 58), at(0, 12, 0, 0), at(1, 5, 0, 0)} {
		seen := SeenAt(s)
		h := HourOf(s)
		var hb *HourBucket
		for i := range hours {
			if hours[i].Hour.Equal(h) {
				hb = &hours[i]
				hb.Version = days[0].Versions[h.Hour()] // any agreeing version
				for j := range days {
					if days[j].Day.Equal(DayOf(h)) {
						hb.Version = days[j].Versions[h.Hour()]
					}
				}
			}
		}
		all, ok, err := CountAboveIn(days, hb, seen, Slice{})
		if err != nil || !ok {
			t.Fatalf("CountAboveIn(%v, all) = %d, %v, %v", s, all, ok, err)
		}
		sum := int64(0)
		for _, r := range recs {
			if r.Message.ID > seen {
				sum++
			}
		}
		byCat := int64(0)
		for _, c := range []string{"a", "b", "c"} {
			n, ok, err := CountAboveIn(days, hb, seen, Slice{Category: c})
			if err != nil || !ok {
				t.Fatalf("CountAboveIn(%v, %q) = %d, %v, %v", s, c, n, ok, err)
			}
			byCat += n
		}
		for _, r := range recs {
			if r.Message.Category == "" && r.Message.ID > seen {
				byCat++
			}
		}
		if all != sum || byCat != sum {
			t.Errorf("above %v: CountAboveIn of all %d, the categories' and the uncategorised %d; the records above %d", s, all, byCat, sum)
		}
	}
}

// TestBucketsThreads: Buckets counts each thread's records apart by
// category (a thread's uncategorised ones under Category ""), and
// CountAboveIn reads a thread's records above a watermark, of one of its
// categories or all of them, from the same buckets; a record without a
// thread counts in no thread.
func TestBucketsThreads(t *testing.T) {
	threaded := func(thread, category string, at time.Time) Record {
		r := rec(category, at)
		r.Message.Thread = thread
		return r
	}
	recs := []Record{
		threaded("chat", "a", at(0, 10, 0, 5)), threaded("chat", "", at(0, 10, 0, 5)), threaded("chat", "b", at(0, 10, 0, 6)),
		threaded("other", "a", at(0, 10, 0, 7)), rec("a", at(0, 10, 0, 8)),
		threaded("chat", "a", at(0, 11, 0, 0)), threaded("chat", "", at(1, 0, 0, 1)),
	}
	days, hours, err := Buckets(recs)
	if err != nil {
		t.Fatal(err)
	}
	var chatA0, chat0, chatB0, otherA0, chat1 [24]int64
	chatA0[10], chatA0[11], chat0[10], chatB0[10], otherA0[10], chat1[0] = 1, 1, 1, 1, 1, 1
	wantThreads := []map[Slice][24]int64{
		{{"chat", "a"}: chatA0, {"chat", ""}: chat0, {"chat", "b"}: chatB0, {"other", "a"}: otherA0},
		{{"chat", ""}: chat1},
	}
	for i, d := range days {
		if diff := cmp.Diff(wantThreads[i], d.Threads); diff != "" {
			t.Errorf("day %v threads (-want +got):\n%s", d.Day, diff)
		}
	}
	if diff := cmp.Diff(map[Slice]map[int]int64{{"chat", "a"}: {5: 1}, {"chat", ""}: {5: 1}, {"chat", "b"}: {6: 1}, {"other", "a"}: {7: 1}}, hours[0].Threads); diff != "" {
		t.Errorf("hour 10 threads (-want +got):\n%s", diff)
	}
	// A watermark at 10:00:05 of day 0, with its hour bucket.
	hour := &hours[0]
	seen := SeenAt(at(0, 10, 0, 5))
	for _, c := range []struct {
		k    Slice
		want int64
	}{
		{Slice{Thread: "chat"}, 3},                // 10:00:06 b, 11:00 a, day 1
		{Slice{Thread: "chat", Category: "a"}, 1}, // 11:00
		{Slice{Thread: "chat", Category: "b"}, 1},
		{Slice{Thread: "other"}, 1},
		{Slice{Thread: "none"}, 0},
		{Slice{Category: "a"}, 3}, // the category's, threads or not
		{Slice{}, 5},
	} {
		n, ok, err := CountAboveIn(days, hour, seen, c.k)
		if n != c.want || !ok || err != nil {
			t.Errorf("CountAboveIn(%+v) = %d, %v, %v; want %d", c.k, n, ok, err, c.want)
		}
	}
	if _, _, err := CountAboveIn(days, hour, seen, Slice{Thread: "a#b"}); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("CountAboveIn of a thread that is no key: %v, want ErrInvalidKey", err)
	}
	// Taken out again, a thread's entries leave, and Threads is nil.
	d, h := days[1], hours[len(hours)-1]
	d.Add(at(1, 0, 0, 1), Slice{Thread: "chat"}, -1)
	h.Add(at(1, 0, 0, 1), Slice{Thread: "chat"}, -1)
	if d.Threads != nil || h.Threads != nil {
		t.Errorf("after the thread's record left: %+v, %+v; want Threads nil", d.Threads, h.Threads)
	}
}

// FuzzParseSlice: whatever a snapshot's encoding or a bucket item holds as
// a slice, it parses without panic, and what parses is a thread and a
// category that are keys (or ""), whose String is the input: no two
// inputs read as one slice. A Slice encodes as JSON map keys and back.
func FuzzParseSlice(f *testing.F) {
	for _, s := range []string{"chat#a", "chat#", "#a", "#", "", "a#b#c", "x.y[1]#é", "a\x00#b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseSlice(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("ParseSlice(%q): %v, not ErrInvalidKey", s, err)
			}
			return
		}
		if ValidateThread(k.Thread) != nil || ValidateCategory(k.Category) != nil || k.String() != s {
			t.Fatalf("ParseSlice(%q) = %+v (%q)", s, k, k.String())
		}
		b, err := json.Marshal(map[Slice]int{k: 1})
		if err != nil {
			t.Fatal(err)
		}
		var back map[Slice]int
		if err := json.Unmarshal(b, &back); err != nil || back[k] != 1 || len(back) != 1 {
			t.Fatalf("JSON of %+v: %s, back %v, %v", k, b, back, err)
		}
	})
}
