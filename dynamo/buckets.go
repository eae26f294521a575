package dynamo

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox/driver"
)

// A shared partition's time buckets (see driver.DayBucket) are items of
// kind UB: a day's, at driver.DayBucketSK, with the counts of its hours
// (h00 to h23), each category's (h00#<category> to h23#<category>) and
// the hours' versions (v00 to v23); an hour's, at driver.HourBucketSK,
// with the counts of its seconds (s0000 to s3599), each category's under
// the category's tag (s0000#<tag> to s3599#<tag>, and c#<tag> holding the
// category: see categoryTag) and its version (v). A change of an hour's
// counts sets, in both items, the hour's version to a new random number,
// so that a reader tells the two apart when a write came between its
// reads of them. A category's counts cost an attribute per hour, and per
// second, that holds its records: in a day item about 8 bytes and the
// category's length each, in an hour item 17 bytes each, whatever the
// category's length. So an hour item with records in every one of its
// 3,600 seconds takes about 25 KB, and 61 KB more for each category that
// has records in every second: DynamoDB's 400 KB item limit allows 6
// such categories in one partition's hour.
//
// A thread's records are counted by thread and category (driver.Slice)
// under the pair's tag (see threadTag): h00@<tag> to h23@<tag> in a day
// item, s0000@<tag> to s3599@<tag> in an hour item, each item holding the
// pair as t#<tag> ("<thread>#<category>"). So a thread's counts cost
// about 16 bytes an hour in a day item, 17 a second in an hour item, and
// its pair once in each, whatever the length of its names.

// hourAttr, versionAttr and secondAttr name a bucket item's attributes.
func hourAttr(h int) string    { return fmt.Sprintf("h%02d", h) }
func versionAttr(h int) string { return fmt.Sprintf("v%02d", h) }
func secondAttr(s int) string  { return fmt.Sprintf("s%04d", s) }

// categoryAttr names the attribute of category's count of an hour or a
// second whose attribute is name: name#<category>. A category has no '#'
// (driver.ValidateKey), so the name parses back (parseBucketAttr).
func categoryAttr(name, category string) string { return name + "#" + category }

// parseBucketAttr parses a bucket item's count attribute name of prefix
// ('h' or 's') and width digits, below limit: its hour or second, and its
// category ("" for the total) or its thread's tag (see threadTag). Any
// other name is not ok.
func parseBucketAttr(name string, prefix byte, width, limit int) (i int, category, thread string, ok bool) {
	if len(name) < 1+width || name[0] != prefix {
		return 0, "", "", false
	}
	for _, c := range []byte(name[1 : 1+width]) {
		if c < '0' || c > '9' {
			return 0, "", "", false
		}
		i = i*10 + int(c-'0')
	}
	if i >= limit {
		return 0, "", "", false
	}
	rest := name[1+width:]
	if rest == "" {
		return i, "", "", true
	}
	if tag, found := strings.CutPrefix(rest, "@"); found {
		if !strings.HasPrefix(tag, "~") || driver.ValidateKey("thread", tag) != nil {
			return 0, "", "", false
		}
		return i, "", tag, true
	}
	category, found := strings.CutPrefix(rest, "#")
	if !found || driver.ValidateKey("category", category) != nil {
		return 0, "", "", false
	}
	return i, category, "", true
}

// categoryTag returns the tag that stands for category in the names of an
// hour item's attributes: '~' and 8 characters of the base64url SHA-256
// of the category (48 bits: two categories of one hour share a tag, and
// their counts, with odds of about 1 in 10^9 for 700 categories), so that
// an attribute's size does not grow with the category's length. It is a
// key (driver.ValidateKey), so parseBucketAttr reads it as a category.
func categoryTag(category string) string {
	sum := sha256.Sum256([]byte(category))
	return "~" + base64.RawURLEncoding.EncodeToString(sum[:6])
}

// tagAttr names the attribute of an hour item that holds the category
// whose tag is tag.
func tagAttr(tag string) string { return "c#" + tag }

// threadTag returns the tag that stands for slice k, a thread's records
// of a category, in the names of a bucket item's attributes: as
// categoryTag, of k's String ("<thread>#<category>"), which the item
// holds (threadAttr).
func threadTag(k driver.Slice) string { return categoryTag(k.String()) }

// threadAttr names the attribute of a bucket item that holds the slice
// whose tag is tag; threadCountAttr names the count of hour or second
// name of the slice whose tag is tag.
func threadAttr(tag string) string            { return "t#" + tag }
func threadCountAttr(name, tag string) string { return name + "@" + tag }

// threadOf returns the slice whose tag is tag, as item holds it; not ok if
// it holds none, or one of another tag or that is no thread's.
func threadOf(item map[string]types.AttributeValue, tag string) (driver.Slice, bool) {
	v, _ := item[threadAttr(tag)].(*types.AttributeValueMemberS)
	if v == nil {
		return driver.Slice{}, false
	}
	k, err := driver.ParseSlice(v.Value)
	if err != nil || k.Thread == "" || threadTag(k) != tag {
		return driver.Slice{}, false
	}
	return k, true
}

// categoryStandIn stands, in a bucket update as the expression builder
// makes it, for the name of a category's count, which the builder would
// misread (a category may hold '.', '[' or ']'); the name takes its place
// among the expression's names; threadStandIn and threadPairStandIn do so
// for a thread's count and its pair's attribute.
const (
	categoryStandIn   = "category_count"
	threadStandIn     = "thread_count"
	threadPairStandIn = "thread_pair"
)

// bucketUpdates returns the transaction items that add n to the time
// buckets of rec, a record of shared partition p: of its category and
// thread (driver.SliceOf).
func (s *Store) bucketUpdates(p driver.Partition, rec driver.Record, n int64) ([]types.TransactWriteItem, error) {
	id, k := rec.Message.ID, driver.SliceOf(rec)
	category := k.Category
	t, err := driver.BucketTime(id)
	if err != nil {
		return nil, err
	}
	if err := driver.ValidateCategory(category); err != nil {
		return nil, err
	}
	// The record's thread, not the slice's: everyone's partition counts
	// no thread apart, but refuses a record whose thread is no key, as
	// a group's does (a Store's refusals do not depend on the slice).
	if err := driver.ValidateThread(rec.Message.Thread); err != nil {
		return nil, err
	}
	v := rand.Int64()
	h := driver.HourOf(t)
	sec := int(t.Sub(h) / time.Second)
	common := func(upd expression.UpdateBuilder) expression.UpdateBuilder {
		return upd.Set(expression.Name("kind"), expression.Value(kindBucket)).
			Set(expression.Name("tenant_key"), expression.Value(p.Tenant)).
			Set(expression.Name("inbox_key"), expression.Value(p.Inbox)).
			Set(expression.Name("uid"), expression.Value(p.Group))
	}
	day := common(expression.Add(expression.Name(hourAttr(t.Hour())), expression.Value(n)).Set(expression.Name(versionAttr(t.Hour())), expression.Value(v)))
	hour := common(expression.Add(expression.Name(secondAttr(sec)), expression.Value(n)).Set(expression.Name("v"), expression.Value(v)))
	if category != "" {
		day = day.Add(expression.Name(categoryStandIn), expression.Value(n))
		hour = hour.Add(expression.Name(categoryAttr(secondAttr(sec), categoryTag(category))), expression.Value(n)).
			Set(expression.Name(tagAttr(categoryTag(category))), expression.Value(category))
	}
	if k.Thread != "" {
		for _, u := range []*expression.UpdateBuilder{&day, &hour} {
			*u = u.Add(expression.Name(threadStandIn), expression.Value(n)).
				Set(expression.Name(threadPairStandIn), expression.Value(k.String()))
		}
	}
	var out []types.TransactWriteItem
	for _, it := range []struct {
		sk, count string
		upd       expression.UpdateBuilder
	}{{driver.DayBucketSK(t), hourAttr(t.Hour()), day}, {driver.HourBucketSK(t), secondAttr(sec), hour}} {
		expr, err := expression.NewBuilder().WithUpdate(it.upd).Build()
		if err != nil {
			return nil, fmt.Errorf("dynamo: bucket update: %w", err)
		}
		names := expr.Names()
		for key, name := range names {
			switch name {
			case categoryStandIn:
				names[key] = categoryAttr(it.count, category)
			case threadStandIn:
				names[key] = threadCountAttr(it.count, threadTag(k))
			case threadPairStandIn:
				names[key] = threadAttr(threadTag(k))
			}
		}
		out = append(out, types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String(s.table),
			Key:                       s.key(p.PK(), it.sk),
			UpdateExpression:          expr.Update(),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: expr.Values(),
		}})
	}
	return out, nil
}

// numAttr returns the number attribute name of av, 0 if it is missing.
func numAttr(av map[string]types.AttributeValue, name string) (int64, error) {
	v, ok := av[name]
	if !ok {
		return 0, nil
	}
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("attribute %q is not a number", name)
	}
	return strconv.ParseInt(n.Value, 10, 64)
}

// decodeDay returns the day bucket item av of partition p.
func (s *Store) decodeDay(p driver.Partition, sk string, av map[string]types.AttributeValue) (driver.DayBucket, error) {
	day, err := driver.ParseDayBucketSK(sk)
	if err != nil {
		return driver.DayBucket{}, fmt.Errorf("dynamo: bucket %s/%s: %w", p.PK(), sk, err)
	}
	d := driver.DayBucket{Day: day}
	for h := range 24 {
		if d.Versions[h], err = numAttr(av, versionAttr(h)); err != nil {
			return driver.DayBucket{}, fmt.Errorf("dynamo: bucket %s/%s: %w", p.PK(), sk, err)
		}
	}
	for name := range av {
		h, category, tag, ok := parseBucketAttr(name, 'h', 2, 24)
		if !ok {
			continue
		}
		n, err := numAttr(av, name)
		if err != nil {
			return driver.DayBucket{}, fmt.Errorf("dynamo: bucket %s/%s: %w", p.PK(), sk, err)
		}
		if tag != "" {
			k, ok := threadOf(av, tag)
			if !ok {
				return driver.DayBucket{}, fmt.Errorf("dynamo: bucket %s/%s: %w: attribute %q: its thread's tag is not held", p.PK(), sk, driver.ErrInvalidInput, name)
			}
			if d.Threads == nil {
				d.Threads = map[driver.Slice][24]int64{}
			}
			c := d.Threads[k]
			c[h] = n
			d.Threads[k] = c
			continue
		}
		if category == "" {
			d.Hours[h] = n
			continue
		}
		if d.Categories == nil {
			d.Categories = map[string][24]int64{}
		}
		c := d.Categories[category]
		c[h] = n
		d.Categories[category] = c
	}
	return d.Clone(), nil // without the categories and threads that count none
}

// hourBucket reads the hour bucket of t's hour of partition p, strongly
// consistent; nil if there is none.
func (s *Store) hourBucket(ctx context.Context, p driver.Partition, t time.Time) (*driver.HourBucket, error) {
	h := driver.HourOf(t)
	items, err := s.batchGet(ctx, []map[string]types.AttributeValue{s.key(p.PK(), driver.HourBucketSK(h))}, true)
	if err != nil {
		return nil, opError("hour bucket", err)
	}
	if len(items) == 0 {
		return nil, nil
	}
	item := items[0]
	hb := &driver.HourBucket{Hour: h, Seconds: map[int]int64{}}
	for name := range item {
		sec, tag, thread, ok := parseBucketAttr(name, 's', 4, 3600)
		if !ok {
			continue
		}
		n, err := numAttr(item, name)
		if err != nil {
			return nil, fmt.Errorf("dynamo: bucket %s/%s: %w", p.PK(), driver.HourBucketSK(h), err)
		}
		if thread != "" {
			k, ok := threadOf(item, thread)
			if !ok {
				return nil, fmt.Errorf("dynamo: bucket %s/%s: %w: attribute %q: its thread's tag is not held", p.PK(), driver.HourBucketSK(h), driver.ErrInvalidInput, name)
			}
			if hb.Threads == nil {
				hb.Threads = map[driver.Slice]map[int]int64{}
			}
			if hb.Threads[k] == nil {
				hb.Threads[k] = map[int]int64{}
			}
			hb.Threads[k][sec] = n
			continue
		}
		if tag == "" {
			hb.Seconds[sec] = n
			continue
		}
		// The category whose tag the name carries, as the item holds it.
		v, _ := item[tagAttr(tag)].(*types.AttributeValueMemberS)
		if v == nil || driver.ValidateKey("category", v.Value) != nil || categoryTag(v.Value) != tag {
			return nil, fmt.Errorf("dynamo: bucket %s/%s: %w: attribute %q: its category's tag is not held", p.PK(), driver.HourBucketSK(h), driver.ErrInvalidInput, name)
		}
		category := v.Value
		if hb.Categories == nil {
			hb.Categories = map[string]map[int]int64{}
		}
		if hb.Categories[category] == nil {
			hb.Categories[category] = map[int]int64{}
		}
		hb.Categories[category][sec] = n
	}
	*hb = hb.Clone() // without the seconds, categories and threads that count none
	if hb.Version, err = numAttr(item, "v"); err != nil {
		return nil, fmt.Errorf("dynamo: bucket %s/%s: %w", p.PK(), driver.HourBucketSK(h), err)
	}
	return hb, nil
}

// bucketItems returns the items a Repair's reset writes of a shared
// partition's buckets: a day item per day of days and an hour item per
// hour of hours, each hour's version v in both.
func (s *Store) bucketItems(p driver.Partition, days []driver.DayBucket, hours []driver.HourBucket, v int64) ([]map[string]types.AttributeValue, error) {
	var out []map[string]types.AttributeValue
	base := func(sk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			s.o.pk: &types.AttributeValueMemberS{Value: p.PK()}, s.o.sk: &types.AttributeValueMemberS{Value: sk},
			"kind": &types.AttributeValueMemberS{Value: kindBucket}, "tenant_key": &types.AttributeValueMemberS{Value: p.Tenant},
			"inbox_key": &types.AttributeValueMemberS{Value: p.Inbox}, "uid": &types.AttributeValueMemberS{Value: p.Group},
		}
	}
	num := func(n int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
	}
	for _, d := range days {
		it := base(driver.DayBucketSK(d.Day))
		for h, n := range d.Hours {
			if n != 0 {
				it[hourAttr(h)], it[versionAttr(h)] = num(n), num(v)
			}
		}
		for c, hours := range d.Categories {
			for h, n := range hours {
				if n != 0 {
					it[categoryAttr(hourAttr(h), c)], it[versionAttr(h)] = num(n), num(v)
				}
			}
		}
		for k, hours := range d.Threads {
			for h, n := range hours {
				if n != 0 {
					it[threadCountAttr(hourAttr(h), threadTag(k))], it[versionAttr(h)] = num(n), num(v)
					it[threadAttr(threadTag(k))] = &types.AttributeValueMemberS{Value: k.String()}
				}
			}
		}
		out = append(out, it)
	}
	for _, h := range hours {
		it := base(driver.HourBucketSK(h.Hour))
		for sec, n := range h.Seconds {
			if n != 0 {
				it[secondAttr(sec)] = num(n)
			}
		}
		for c, secs := range h.Categories {
			for sec, n := range secs {
				if n != 0 {
					it[categoryAttr(secondAttr(sec), categoryTag(c))] = num(n)
					it[tagAttr(categoryTag(c))] = &types.AttributeValueMemberS{Value: c}
				}
			}
		}
		for k, secs := range h.Threads {
			for sec, n := range secs {
				if n != 0 {
					it[threadCountAttr(secondAttr(sec), threadTag(k))] = num(n)
					it[threadAttr(threadTag(k))] = &types.AttributeValueMemberS{Value: k.String()}
				}
			}
		}
		it["v"] = num(v)
		out = append(out, it)
	}
	return out, nil
}
