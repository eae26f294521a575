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
// category ("" for the total). Any other name is not ok.
func parseBucketAttr(name string, prefix byte, width, limit int) (i int, category string, ok bool) {
	if len(name) < 1+width || name[0] != prefix {
		return 0, "", false
	}
	for _, c := range []byte(name[1 : 1+width]) {
		if c < '0' || c > '9' {
			return 0, "", false
		}
		i = i*10 + int(c-'0')
	}
	if i >= limit {
		return 0, "", false
	}
	rest := name[1+width:]
	if rest == "" {
		return i, "", true
	}
	category, found := strings.CutPrefix(rest, "#")
	if !found || driver.ValidateKey("category", category) != nil {
		return 0, "", false
	}
	return i, category, true
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

// categoryStandIn stands, in a bucket update as the expression builder
// makes it, for the name of a category's count, which the builder would
// misread (a category may hold '.', '[' or ']'); the name takes its place
// among the expression's names.
const categoryStandIn = "category_count"

// bucketUpdates returns the transaction items that add n to the time
// buckets of record id, of category, of shared partition p.
func (s *Store) bucketUpdates(p driver.Partition, id, category string, n int64) ([]types.TransactWriteItem, error) {
	t, err := driver.BucketTime(id)
	if err != nil {
		return nil, err
	}
	if err := driver.ValidateCategory(category); err != nil {
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
		for k, name := range names {
			if name == categoryStandIn {
				names[k] = categoryAttr(it.count, category)
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
		h, category, ok := parseBucketAttr(name, 'h', 2, 24)
		if !ok {
			continue
		}
		n, err := numAttr(av, name)
		if err != nil {
			return driver.DayBucket{}, fmt.Errorf("dynamo: bucket %s/%s: %w", p.PK(), sk, err)
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
	return d.Clone(), nil // without the categories that count none
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
		sec, tag, ok := parseBucketAttr(name, 's', 4, 3600)
		if !ok {
			continue
		}
		n, err := numAttr(item, name)
		if err != nil {
			return nil, fmt.Errorf("dynamo: bucket %s/%s: %w", p.PK(), driver.HourBucketSK(h), err)
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
	*hb = hb.Clone() // without the seconds and categories that count none
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
		it["v"] = num(v)
		out = append(out, it)
	}
	return out, nil
}
