package dynamo

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stak/inbox/driver"
)

// idAt returns a message ID of instant t.
func idAt(t time.Time) string {
	return ulid.MustNew(ulid.Timestamp(t), strings.NewReader(strings.Repeat("\x00", 10))).String()
}

// TestParseBucketAttr: a bucket item's count attribute names its hour or
// second in exactly its digits, and a category after '#' that is a key or
// a thread's tag after '@'; anything else is no count (a sign, too few
// digits, out of range, an empty category or one that is not a key, a tag
// that is not one).
func TestParseBucketAttr(t *testing.T) {
	for _, c := range []struct {
		name         string
		prefix       byte
		width, limit int
		i            int
		category     string
		ok           bool
		thread       string
	}{
		{"h05@~abcdefgh", 'h', 2, 24, 5, "", true, "~abcdefgh"},
		{"s0001@~a-b_c", 's', 4, 3600, 1, "", true, "~a-b_c"},
		{"h05@abc", 'h', 2, 24, 0, "", false, ""},
		{"h05@~a#b", 'h', 2, 24, 0, "", false, ""},
		{"h05@", 'h', 2, 24, 0, "", false, ""},
		{"h05#a@b", 'h', 2, 24, 5, "a@b", driver.ValidateKey("category", "a@b") == nil, ""},
		{"h05", 'h', 2, 24, 5, "", true, ""},
		{"h23#billing", 'h', 2, 24, 23, "billing", true, ""},
		{"h05#a.b[1]", 'h', 2, 24, 5, "a.b[1]", true, ""},
		{"s3599#x y", 's', 4, 3600, 3599, "x y", true, ""},
		{"s0000", 's', 4, 3600, 0, "", true, ""},
		{"h24", 'h', 2, 24, 0, "", false, ""},
		{"s3600#a", 's', 4, 3600, 0, "", false, ""},
		{"h5", 'h', 2, 24, 0, "", false, ""},
		{"h+5", 'h', 2, 24, 0, "", false, ""},
		{"s+123", 's', 4, 3600, 0, "", false, ""},
		{"s-001", 's', 4, 3600, 0, "", false, ""},
		{"h05#", 'h', 2, 24, 0, "", false, ""},
		{"h05#a#b", 'h', 2, 24, 0, "", false, ""},
		{"h05#a*b", 'h', 2, 24, 0, "", false, ""},
		{"h05x", 'h', 2, 24, 0, "", false, ""},
		{"h05" + "#" + strings.Repeat("c", driver.MaxKeyLen+1), 'h', 2, 24, 0, "", false, ""},
		{"v05", 'h', 2, 24, 0, "", false, ""},
		{"", 'h', 2, 24, 0, "", false, ""},
	} {
		if !c.ok {
			c.i, c.category = 0, ""
		}
		i, category, thread, ok := parseBucketAttr(c.name, c.prefix, c.width, c.limit)
		if i != c.i || category != c.category || thread != c.thread || ok != c.ok {
			t.Errorf("parseBucketAttr(%q) = %d, %q, %q, %v; want %d, %q, %q, %v", c.name, i, category, thread, ok, c.i, c.category, c.thread, c.ok)
		}
	}
}

// FuzzParseBucketAttr: whatever another program names an attribute of a
// bucket item, it parses without panic, and what parses is the name the
// Store writes for its hour or second and category: no two names read as
// one count.
func FuzzParseBucketAttr(f *testing.F) {
	for _, s := range []string{"h05", "h05#a", "h05#", "h05#a#b", "h+1", "s+123", "s0123#x.y[1]", "h24", "s3600", "v", "s0001#é", "h05@~abcdefgh", "s0001@~x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		for _, k := range []struct {
			prefix       byte
			width, limit int
			format       func(int) string
		}{{'h', 2, 24, hourAttr}, {'s', 4, 3600, secondAttr}} {
			i, category, thread, ok := parseBucketAttr(name, k.prefix, k.width, k.limit)
			if !ok {
				continue
			}
			if i < 0 || i >= k.limit || driver.ValidateCategory(category) != nil || (category != "" && thread != "") {
				t.Fatalf("parseBucketAttr(%q) = %d, %q, %q", name, i, category, thread)
			}
			want := k.format(i)
			if category != "" {
				want = categoryAttr(want, category)
			}
			if thread != "" {
				want = threadCountAttr(want, thread)
			}
			if want != name {
				t.Fatalf("parseBucketAttr(%q) = %d, %q, which the Store names %q", name, i, category, want)
			}
		}
	})
}

// TestBucketItemSize: the bucket items of a day, and of an hour, whose
// every hour and second hold records of 6 categories of 128 bytes (the
// longest key), as a reset writes them, are within DynamoDB's 400 KB:
// the hour item names a category by its tag, so its size does not grow
// with the category's length (the sizes the buckets' doc states).
func TestBucketItemSize(t *testing.T) {
	s := New(nil, "t")
	p := driver.Partition{Tenant: "acme", Inbox: "alerts", Group: driver.PublicGroup}
	day := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	category := func(c int) string { return fmt.Sprintf("%d", c) + strings.Repeat("c", driver.MaxKeyLen-1) }
	var recs []driver.Record
	for sec := range 3600 {
		for c := range 6 {
			recs = append(recs, driver.Record{Message: driver.Message{ID: idAt(day.Add(time.Duration(sec) * time.Second)), Category: category(c)}})
		}
	}
	for h := 1; h < 24; h++ {
		for c := range 6 {
			recs = append(recs, driver.Record{Message: driver.Message{ID: idAt(day.Add(time.Duration(h) * time.Hour)), Category: category(c)}})
		}
	}
	days, hours, err := driver.Buckets(recs)
	if err != nil {
		t.Fatal(err)
	}
	items, err := s.bucketItems(p, days, hours[:1], 1<<62)
	if err != nil {
		t.Fatal(err)
	}
	daySize, hourSize := itemSize(items[0]), itemSize(items[1])
	t.Logf("6 categories of 128 bytes: a day item of every hour %d bytes, an hour item of every second %d bytes", daySize, hourSize)
	if daySize > 24<<10 || hourSize > driver.MaxItemSize || hourSize < 300<<10 {
		t.Errorf("bucket items of 6 categories: day %d bytes, hour %d; want at most 24 KB, and about 390 KB, within %d", daySize, hourSize, driver.MaxItemSize)
	}
}

// TestBucketItemSizeThreads: the bucket items of a group chat's busiest
// hour, a record in every second of one thread and category of 128 bytes
// each, stay far below DynamoDB's 400 KB (about 4 KB and 145 KB, with the
// category's own counts, which the day item names in full): a thread's
// counts are named by its tag, whatever the length of its names, and cost
// about as much as a category's (the sizes the buckets' doc states).
func TestBucketItemSizeThreads(t *testing.T) {
	s := New(nil, "t")
	p := driver.Partition{Tenant: "acme", Inbox: "chat", Group: "team"}
	day := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	long := strings.Repeat("c", driver.MaxKeyLen)
	var recs []driver.Record
	for sec := range 3600 {
		recs = append(recs, driver.Record{Message: driver.Message{ID: idAt(day.Add(time.Duration(sec) * time.Second)), Category: long, Thread: long}})
	}
	for h := 1; h < 24; h++ {
		recs = append(recs, driver.Record{Message: driver.Message{ID: idAt(day.Add(time.Duration(h) * time.Hour)), Category: long, Thread: long}})
	}
	days, hours, err := driver.Buckets(recs)
	if err != nil {
		t.Fatal(err)
	}
	items, err := s.bucketItems(p, days, hours[:1], 1<<62)
	if err != nil {
		t.Fatal(err)
	}
	daySize, hourSize := itemSize(items[0]), itemSize(items[1])
	t.Logf("a thread and a category of 128 bytes: a day item of every hour %d bytes, an hour item of every second %d bytes", daySize, hourSize)
	if daySize > 6<<10 || hourSize > 200<<10 {
		t.Errorf("bucket items of a thread: day %d bytes, hour %d; want at most 6 KB and 200 KB", daySize, hourSize)
	}
}
