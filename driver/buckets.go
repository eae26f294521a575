package driver

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// A shared partition's records (its broadcasts, or a group's messages)
// are counted by the second of their IDs' time in time buckets, which a
// Store keeps beside the counters: a DayBucket per day (UTC) that holds
// a record, with its count per hour, and an HourBucket per hour that
// holds one, with its count per second. PutMessage of a shared record
// adds 1 to its buckets, an ApplyRemoval that applies takes 1 out (both
// in the same atomic unit as the counters), so they count the
// partition's stored records, as its published counter does: scheduled
// ones too (by their IDs, minted at their delivery time), and those that
// expired until their removal is accounted.
//
// Counts reads them for the unseen count of a user whose seen watermark
// lies below a snapshot's newest records: the records above a watermark
// are those of the days after its day, of the hours after its hour in its
// day (both from the day buckets, which Stats returns with the counters),
// and of the seconds after its second in its hour (one hour bucket, read
// apart: StatsQuery.Hour), whatever their number. Watermarks end a second
// (SeenAt), so that no record is read for it. The buckets count each
// category's records apart too (DayBucket.Categories,
// HourBucket.Categories), so that the records of one category above a
// watermark are read from the same items (see CountAboveIn). They count
// each thread's records apart too, by thread and category
// (DayBucket.Threads, HourBucket.Threads): the records of one thread above
// a bound are read from the same items, whatever the thread's history.

// DayBucket is the time bucket of one day of a shared partition.
type DayBucket struct {
	// Day is the day's first instant, UTC.
	Day time.Time
	// Hours are the partition's records by hour of the day (UTC).
	Hours [24]int64
	// Categories are the records of each category (but "", whose records
	// Hours alone counts) by hour of the day; a category none of whose
	// hours counts a record is left out, and Categories is nil when none
	// is left. A bucket grows with the categories its day's records use:
	// a Store keeps a count per category and hour that holds one.
	Categories map[string][24]int64
	// Threads are the records of each thread (Message.Thread) by category
	// (Slice.Category "" for the thread's uncategorised records) and hour
	// of the day, left out as Categories are, and nil when none is left.
	// Records without a thread count in Hours and Categories alone.
	Threads map[Slice][24]int64
	// Versions are, per hour, the version of that hour's counts: a new
	// value (any, unique to the change) with every change of them, set in
	// the hour's HourBucket too, so that the two agree when they were read
	// at the same instant (see HourBucket.Version).
	Versions [24]int64
}

// Count returns the records of d's day.
func (d DayBucket) Count() int64 {
	var n int64
	for _, h := range d.Hours {
		n += h
	}
	return n
}

// HourBucket is the time bucket of one hour of a shared partition.
type HourBucket struct {
	// Hour is the hour's first instant, UTC.
	Hour time.Time
	// Seconds are the partition's records by second of the hour (0 to
	// 3599); seconds without records are left out.
	Seconds map[int]int64
	// Categories are the records of each category (but "") by second of
	// the hour, as Seconds; seconds without records of the category, and
	// categories without any, are left out, and Categories is nil when
	// none is left.
	Categories map[string]map[int]int64
	// Threads are the records of each thread by category (as
	// DayBucket.Threads) and second of the hour, left out as Categories
	// are.
	Threads map[Slice]map[int]int64
	// Version is the version of the hour's counts, set with every change
	// of them (and by a Repair that resets them) in the same atomic unit
	// as the Versions entry of the hour in its day's DayBucket: a reader
	// tells an hour bucket read apart from a day bucket of another instant
	// (a write came between) by their versions.
	Version int64
}

// Slice names the records a count of the time buckets is of: Thread ""
// for those of Category ("" for all of them); Thread set for those of the
// thread, of Category (in a count: "" for the thread's uncategorised
// records; in a query, as CountAboveIn's, "" for all of the thread's).
type Slice struct {
	Thread   string
	Category string
}

// String returns k as "<thread>#<category>" (neither holds a '#'), as
// ParseSlice reads it.
func (k Slice) String() string { return k.Thread + "#" + k.Category }

// ParseSlice parses a Slice's String; anything but a thread and a
// category, each "" or a key, is ErrInvalidKey.
func ParseSlice(s string) (Slice, error) {
	thread, category, found := strings.Cut(s, "#")
	if !found || ValidateThread(thread) != nil || ValidateCategory(category) != nil {
		return Slice{}, fmt.Errorf("%w: bucket slice %q", ErrInvalidKey, s)
	}
	return Slice{Thread: thread, Category: category}, nil
}

// MarshalText encodes k as its String, so that the buckets' maps keyed by
// slices encode as JSON objects.
func (k Slice) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText decodes a MarshalText, as ParseSlice.
func (k *Slice) UnmarshalText(b []byte) error {
	v, err := ParseSlice(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// SliceOf returns the slice of the time buckets r, a shared partition's
// record, is counted in beside the totals: its thread's and category's in
// a group's partition, its category's alone in everyone's (a thread's
// counts serve a member's read position in a group's thread, and cost a
// day item some 49 bytes per thread and category of the day: a group
// whose messages use thousands of threads a day would pass DynamoDB's
// item limit, everyone's partition many more).
func SliceOf(r Record) Slice {
	if r.Partition.IsPublic() {
		return Slice{Category: r.Message.Category}
	}
	return Slice{Thread: r.Message.Thread, Category: r.Message.Category}
}

// BucketTime returns the time by which record id is counted in a shared
// partition's time buckets: its ID's time, truncated to the second.
func BucketTime(id string) (time.Time, error) {
	u, err := ulid.ParseStrict(id)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: message id %q is not a ULID", ErrInvalidKey, id)
	}
	return time.UnixMilli(int64(u.Time())).UTC().Truncate(time.Second), nil
}

// DayOf returns the first instant (UTC) of t's day.
func DayOf(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// HourOf returns the first instant (UTC) of t's hour.
func HourOf(t time.Time) time.Time { return t.UTC().Truncate(time.Hour) }

// BucketPrefixes of the sort keys of a shared partition's time buckets: a
// day's, in the range Stats reads (between the counters and the seen
// watermark), and an hour's, outside it, read one at a time.
const (
	DayBucketPrefix  = "cd#" // cd#<yyyymmdd>
	HourBucketPrefix = "k#"  // k#<yyyymmddhh>
)

// DayBucketSK returns the sort key of the day bucket of t's day:
// cd#<yyyymmdd>.
func DayBucketSK(t time.Time) string { return DayBucketPrefix + t.UTC().Format("20060102") }

// HourBucketSK returns the sort key of the hour bucket of t's hour:
// k#<yyyymmddhh>.
func HourBucketSK(t time.Time) string { return HourBucketPrefix + t.UTC().Format("2006010215") }

// ParseDayBucketSK parses a DayBucketSK into its day; anything else is
// ErrInvalidKey.
func ParseDayBucketSK(sk string) (time.Time, error) {
	return parseBucketSK(sk, DayBucketPrefix, "20060102")
}

// ParseHourBucketSK parses an HourBucketSK into its hour; anything else is
// ErrInvalidKey.
func ParseHourBucketSK(sk string) (time.Time, error) {
	return parseBucketSK(sk, HourBucketPrefix, "2006010215")
}

func parseBucketSK(sk, prefix, layout string) (time.Time, error) {
	if len(sk) != len(prefix)+len(layout) || sk[:len(prefix)] != prefix {
		return time.Time{}, fmt.Errorf("%w: bucket key %q", ErrInvalidKey, sk)
	}
	t, err := time.Parse(layout, sk[len(prefix):])
	if err != nil || t.Format(layout) != sk[len(prefix):] {
		return time.Time{}, fmt.Errorf("%w: bucket key %q", ErrInvalidKey, sk)
	}
	return t.UTC(), nil
}

// Add adds n records of slice k (its thread's, if any, and category's)
// at t, an instant of d's day, to d's counts (Hours, Categories unless
// k.Category is "", Threads unless k.Thread is ""), leaving out an entry
// it brings to zero. It leaves Versions as they are.
func (d *DayBucket) Add(t time.Time, k Slice, n int64) {
	h := t.UTC().Hour()
	d.Hours[h] += n
	if k.Category != "" {
		d.Categories = addHour(d.Categories, k.Category, h, n)
	}
	if k.Thread != "" {
		d.Threads = addHour(d.Threads, k, h, n)
	}
}

// addHour adds n to hour h of m's entry k, leaving it out when zero; it
// returns m, nil when empty.
func addHour[K comparable](m map[K][24]int64, k K, h int, n int64) map[K][24]int64 {
	c := m[k]
	c[h] += n
	if c != [24]int64{} {
		if m == nil {
			m = map[K][24]int64{}
		}
		m[k] = c
		return m
	}
	delete(m, k)
	if len(m) == 0 {
		return nil
	}
	return m
}

// Clone returns a copy of d that shares no map with it, without the
// categories and threads that count no record.
func (d DayBucket) Clone() DayBucket {
	c := d
	c.Categories = nonzeroDays(d.Categories)
	c.Threads = nonzeroDays(d.Threads)
	return c
}

// nonzeroDays returns a copy of m without its entries that count no
// record; nil when none is left.
func nonzeroDays[K comparable](m map[K][24]int64) map[K][24]int64 {
	var out map[K][24]int64
	for k, v := range m {
		if v != [24]int64{} {
			if out == nil {
				out = map[K][24]int64{}
			}
			out[k] = v
		}
	}
	return out
}

// hoursOf returns d's records of slice k by hour: all its records if k
// is zero, all of k.Thread's if k.Category alone is "".
func (d DayBucket) hoursOf(k Slice) [24]int64 {
	switch {
	case k.Thread == "" && k.Category == "":
		return d.Hours
	case k.Thread == "":
		return d.Categories[k.Category]
	case k.Category != "":
		return d.Threads[k]
	}
	var out [24]int64
	for t, hours := range d.Threads {
		if t.Thread == k.Thread {
			for i, n := range hours {
				out[i] += n
			}
		}
	}
	return out
}

// Add adds n records of slice k at t, an instant of h's hour, to h's
// counts (Seconds, Categories unless k.Category is "", Threads unless
// k.Thread is ""), leaving out the seconds and the entries it brings to
// zero. It leaves Version as it is.
func (h *HourBucket) Add(t time.Time, k Slice, n int64) {
	sec := int(t.Sub(h.Hour) / time.Second)
	if h.Seconds == nil {
		h.Seconds = map[int]int64{}
	}
	if h.Seconds[sec] += n; h.Seconds[sec] == 0 {
		delete(h.Seconds, sec)
	}
	if k.Category != "" {
		h.Categories = addSecond(h.Categories, k.Category, sec, n)
	}
	if k.Thread != "" {
		h.Threads = addSecond(h.Threads, k, sec, n)
	}
}

// addSecond adds n to second sec of m's entry k, leaving out the second
// and the entry when zero; it returns m, nil when empty.
func addSecond[K comparable](m map[K]map[int]int64, k K, sec int, n int64) map[K]map[int]int64 {
	if m == nil {
		m = map[K]map[int]int64{}
	}
	c := m[k]
	if c == nil {
		c = map[int]int64{}
		m[k] = c
	}
	if c[sec] += n; c[sec] == 0 {
		delete(c, sec)
	}
	if len(c) == 0 {
		delete(m, k)
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// Clone returns a copy of h that shares no map with it, without the
// seconds, categories and threads that count no record (Seconds never
// nil).
func (h HourBucket) Clone() HourBucket {
	c := h
	c.Seconds = nonzero(h.Seconds)
	c.Categories = nonzeroSeconds(h.Categories)
	c.Threads = nonzeroSeconds(h.Threads)
	return c
}

// nonzeroSeconds returns a copy of m without its zero counts and the
// entries left without any; nil when none is left.
func nonzeroSeconds[K comparable](m map[K]map[int]int64) map[K]map[int]int64 {
	var out map[K]map[int]int64
	for k, v := range m {
		if s := nonzero(v); len(s) > 0 {
			if out == nil {
				out = map[K]map[int]int64{}
			}
			out[k] = s
		}
	}
	return out
}

// nonzero returns a copy of m without its zero counts.
func nonzero(m map[int]int64) map[int]int64 {
	out := make(map[int]int64, len(m))
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// secondsOf returns h's records of slice k by second, as hoursOf.
func (h *HourBucket) secondsOf(k Slice) map[int]int64 {
	switch {
	case k.Thread == "" && k.Category == "":
		return h.Seconds
	case k.Thread == "":
		return h.Categories[k.Category]
	case k.Category != "":
		return h.Threads[k]
	}
	out := map[int]int64{}
	for t, secs := range h.Threads {
		if t.Thread == k.Thread {
			for s, n := range secs {
				out[s] += n
			}
		}
	}
	return out
}

// Buckets returns the time buckets of recs, records of one shared
// partition: what a Store keeps of them (Versions and Version zero), by
// day and by hour, each category's and each thread's records counted
// apart (by SliceOf). Recount resets a partition's buckets to these.
func Buckets(recs []Record) ([]DayBucket, []HourBucket, error) {
	days := map[time.Time]*DayBucket{}
	hours := map[time.Time]*HourBucket{}
	var dayOrder []time.Time
	var hourOrder []time.Time
	for _, r := range recs {
		t, err := BucketTime(r.Message.ID)
		if err != nil {
			return nil, nil, err
		}
		d, h := DayOf(t), HourOf(t)
		if days[d] == nil {
			days[d] = &DayBucket{Day: d}
			dayOrder = append(dayOrder, d)
		}
		days[d].Add(t, SliceOf(r), 1)
		if hours[h] == nil {
			hours[h] = &HourBucket{Hour: h, Seconds: map[int]int64{}}
			hourOrder = append(hourOrder, h)
		}
		hours[h].Add(t, SliceOf(r), 1)
	}
	outD := make([]DayBucket, 0, len(days))
	for _, d := range dayOrder {
		outD = append(outD, *days[d])
	}
	outH := make([]HourBucket, 0, len(hours))
	for _, h := range hourOrder {
		outH = append(outH, *hours[h])
	}
	return outD, outH, nil
}

// CountAboveIn returns how many records of slice k (the zero Slice for
// all; see Slice) the time buckets count above seen, a watermark that ends a second (SeenAt):
// those of the days of days after seen's day, of the hours of seen's day
// after its hour, and of the seconds of hour (seen's hour bucket; nil if
// it holds none) after its second. hour is needed only if seen's day
// counts records of k in seen's hour: ok is false if it is then
// not of seen's hour, or disagrees with its day bucket (another version:
// read at another instant). An hour that holds other records alone needs
// no hour bucket, since the day bucket counts none of k in it. A category
// or thread that is not a key is ErrInvalidKey.
func CountAboveIn(days []DayBucket, hour *HourBucket, seen string, k Slice) (n int64, ok bool, err error) {
	if err := ValidateCategory(k.Category); err != nil {
		return 0, false, err
	}
	if err := ValidateThread(k.Thread); err != nil {
		return 0, false, err
	}
	t, err := BucketTime(seen)
	if err != nil {
		return 0, false, err
	}
	d, h := DayOf(t), HourOf(t)
	for _, b := range days {
		hours := b.hoursOf(k)
		switch {
		case b.Day.After(d):
			for _, c := range hours {
				n += c
			}
		case b.Day.Equal(d):
			for i := t.Hour() + 1; i < 24; i++ {
				n += hours[i]
			}
			if hours[t.Hour()] == 0 {
				continue // no record of k in seen's hour: no hour bucket needed
			}
			if hour == nil || !hour.Hour.Equal(h) || hour.Version != b.Versions[t.Hour()] {
				return 0, false, nil
			}
			for s, c := range hour.secondsOf(k) {
				if s > int(t.Sub(h)/time.Second) {
					n += c
				}
			}
		}
	}
	return n, true, nil
}

// SeenAt returns the seen watermark of an instant t: the greatest message
// ID of t's second (of its last millisecond), so that every message
// published in that second, before or after t, counts as seen, and the
// unseen count of a watermark is read from per-second counts (see
// CountAboveIn) and from records' IDs alike.
func SeenAt(t time.Time) string {
	var id ulid.ULID
	_ = id.SetTime(ulid.Timestamp(t.UTC().Truncate(time.Second).Add(time.Second - time.Millisecond)))
	for i := 6; i < len(id); i++ {
		id[i] = 0xff
	}
	return id.String()
}

// ValidateRepairBuckets checks r.Days and r.Hours, of a Repair, as every
// Store must before it writes: each category a key, each thread's a
// thread and a category, each second of an hour between 0 and 3599.
// Anything else is ErrInvalidInput.
func ValidateRepairBuckets(r Repair) error {
	slice := func(k Slice) error {
		if k.Thread == "" && k.Category == "" {
			return fmt.Errorf("%w: bucket reset: a count of no category or thread", ErrInvalidInput)
		}
		if err := ValidateCategory(k.Category); err != nil {
			return fmt.Errorf("%w: bucket reset: %v", ErrInvalidInput, err)
		}
		if err := ValidateThread(k.Thread); err != nil {
			return fmt.Errorf("%w: bucket reset: %v", ErrInvalidInput, err)
		}
		return nil
	}
	seconds := func(h HourBucket, m map[int]int64) error {
		for s := range m {
			if s < 0 || s >= 3600 {
				return fmt.Errorf("%w: bucket reset: second %d of hour %v", ErrInvalidInput, s, h.Hour)
			}
		}
		return nil
	}
	for _, d := range r.Days {
		for c := range d.Categories {
			if err := slice(Slice{Category: c}); err != nil {
				return err
			}
		}
		for k := range d.Threads {
			if k.Thread == "" {
				return fmt.Errorf("%w: bucket reset: a thread's count of no thread", ErrInvalidInput)
			}
			if err := slice(k); err != nil {
				return err
			}
		}
	}
	for _, h := range r.Hours {
		if err := seconds(h, h.Seconds); err != nil {
			return err
		}
		for c, m := range h.Categories {
			if err := cmp.Or(slice(Slice{Category: c}), seconds(h, m)); err != nil {
				return err
			}
		}
		for k, m := range h.Threads {
			if k.Thread == "" {
				return fmt.Errorf("%w: bucket reset: a thread's count of no thread", ErrInvalidInput)
			}
			if err := cmp.Or(slice(k), seconds(h, m)); err != nil {
				return err
			}
		}
	}
	return nil
}
