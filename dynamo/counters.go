package dynamo

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox/driver"
)

// hasRead reports whether c's item carries a read tally: always in a user
// partition, and in a shared one only if something (wrongly) changes it.
func hasRead(c driver.Counter) bool { return !c.Partition.IsShared() || c.Read != 0 }

// counterWrite is what a counter update does besides adding its change.
type counterWrite struct {
	// bump adds 1 to the partition's version (kept on c#*).
	bump bool
	// recent changes the recent receipts of a user's c#*.
	recent *recentChange
	// cond is a condition of the update (ANDed with Latest's).
	cond *expression.ConditionBuilder
	// recounted, if set, is recorded as the recount time (c#* only).
	recounted time.Time
	// seen, if set, is recorded as the partition's Fence (c#* only).
	seen string
	// bucketed records the partition as Bucketed (a shared c#* only).
	bucketed bool
	// returnOld asks for the item as it was when its condition fails.
	returnOld bool
	// skipHint writes a change of the receipts' hint of a user's counter
	// of a shared thread (driver.Counter.Latest and Top) in the form it
	// does not try first (see hintUpdate): a write's first form changes
	// the hint, a removal's leaves it (most removals are of receipts below
	// Latest).
	skipHint bool
	// muted, if set, replaces a user's preferences (c#* only): her own
	// are written, even if none ("" for the attribute); else it is
	// removed, and she follows the defaults.
	muted *driver.Preferences
	// above adds to the Above of the partition's categories (c#* only; by
	// attribute name: see categoryAboveAttr).
	above map[string]int64
	// mutes holds the threads of the partition's muted counters the write
	// changes, each with whether it takes the thread as muted (c#* only):
	// on condition that it is, or is not (see mutedCond).
	mutes map[string]bool
	// mutedAdd adds to the tallies of muted threads' counters (c#* only; by
	// document path: a thread's attribute, a dot, a key of its map).
	mutedAdd map[string]int64
	// mutedSet writes muted threads' maps anew, mutedRemove removes them
	// (c#* only; by attribute name: see mutedAttr).
	mutedSet    map[string]map[string]int64
	mutedRemove []string
	// moves holds the cover marks of the write (c#* only; by thread, of
	// a group's messages or direct): guardedCounterUpdates applies them
	// (see coverWrite), a group's thread's on the user's counter of the
	// group (c#*#<group>).
	moves map[driver.GroupThread]driver.CoverChange
	// groupConds holds conditions of the updates of the partition's
	// counters of groups (c#* only; by group): guardedCounterUpdates
	// puts them there, the counter changed by nothing else if need be.
	groupConds map[string]expression.ConditionBuilder
	// follow, on a user partition's c#* write, conditions the update of
	// its thread's own counter on that counter's Latest, which it sets to
	// the update's, whatever its order (see driver.Record.Follows).
	follow *follow
	// covers holds what the write does to covered threads' maps (c#*,
	// of direct threads, and a user's c#*#<group>, of the group's; by
	// thread: see coverWrite).
	covers map[string]*coverWrite
}

// The Above of a user's categories (driver.Counter.Above of c#<category>
// and c#<category>#<group>) is kept on the partition's c#* item, one
// number attribute per category and group, not on the categories' items:
// every change of an Above changes the total's too, so it costs no item
// more, and MarkSeen sets every Above anew in one item, whatever the
// number of categories. The c#* item grows by an attribute per category
// (and per category and group of receipts) that ever held a message
// above the watermark: its name, 4/3 of the keys' bytes and 3 more, and
// a number (a category of 10 bytes: about 20 bytes); MarkSeen leaves an
// Above at zero, and a Recount that rewrites the counters drops the
// zeros. So the item's 400 KB bound the distinct categories a user meets
// between such recounts (docs/operations.md, Limits).

// categoryAbovePrefix begins the names of the attributes of c#* that keep
// the Above of a category: a#<category>, a#<category>#<group>, each key
// base64url-encoded (without padding) so that the name is plain to an
// expression whatever the key holds.
const categoryAbovePrefix = "a#"

// categoryAboveAttr returns the attribute name of c#* that keeps the
// Above of counter c of a category.
func categoryAboveAttr(c driver.Counter) string {
	name := categoryAbovePrefix + base64.RawURLEncoding.EncodeToString([]byte(c.Category))
	if c.Group != "" {
		name += "#" + base64.RawURLEncoding.EncodeToString([]byte(c.Group))
	}
	return name
}

// parseCategoryAboveAttr returns the counter (of p, its Category and
// Group) whose Above attribute of c#* is name; ok is false for any other
// attribute, one of the prefix that is not in categoryAboveAttr's one form
// of valid keys included (not the library's: left alone, as the seeds'
// own attributes are).
func parseCategoryAboveAttr(p driver.Partition, name string) (c driver.Counter, ok bool) {
	rest, ok := strings.CutPrefix(name, categoryAbovePrefix)
	if !ok {
		return driver.Counter{}, false
	}
	cat, group, _ := strings.Cut(rest, "#")
	c.Partition = p
	b, err := base64.RawURLEncoding.Strict().DecodeString(cat)
	if err == nil {
		c.Category = string(b)
		if group != "" {
			b, err = base64.RawURLEncoding.Strict().DecodeString(group)
			c.Group = string(b)
		}
	}
	if err != nil || c.Category == "" || driver.ValidateCounter(c) != nil || categoryAboveAttr(c) != name {
		return driver.Counter{}, false
	}
	return c, true
}

// categoryAbove returns the Above of each category a user's c#* item av
// keeps, by counter key (Category and Group).
func categoryAbove(p driver.Partition, av map[string]types.AttributeValue) (map[driver.Counter]int64, error) {
	var out map[driver.Counter]int64
	for name := range av {
		c, ok := parseCategoryAboveAttr(p, name)
		if !ok {
			continue
		}
		n, err := numAttr(av, name)
		if err != nil {
			return nil, fmt.Errorf("dynamo: counter %s/%s: %w: %v", p.PK(), driver.CounterSK("", ""), driver.ErrInvalidInput, err)
		}
		if n != 0 {
			if out == nil {
				out = map[driver.Counter]int64{}
			}
			out[c] = n
		}
	}
	return out, nil
}

// withCategoryAbove sets, on the counters of cs (of one partition), the
// Above of each category that above holds (see categoryAbove); a category
// with an Above but no counter read gets a counter of its Above alone,
// if want says the read asked for it (nil: any).
func withCategoryAbove(cs []driver.Counter, above map[driver.Counter]int64, want func(driver.Counter) bool) []driver.Counter {
	if len(above) == 0 {
		return cs
	}
	seen := map[driver.Counter]bool{}
	for i, c := range cs {
		if c.Thread == "" && c.Category != "" {
			k := driver.Counter{Partition: c.Partition, Category: c.Category, Group: c.Group}
			cs[i].Above, seen[k] = above[k], true
		}
	}
	var extra []driver.Counter
	for k, n := range above {
		if !seen[k] && (want == nil || want(k)) {
			k.Above = n
			extra = append(extra, k)
		}
	}
	slices.SortFunc(extra, func(a, b driver.Counter) int { return strings.Compare(a.SK(), b.SK()) })
	return append(cs, extra...)
}

// The counters of a user's muted threads (driver.Counter.Muted) are kept
// on the partition's c#* item, as the Above of its categories are, one
// map attribute per muted thread, mt#<thread> (base64url), holding each
// category's Unread and Above under u<category> and a<category> (the
// category base64url-encoded, "" for all): every change of them changes
// the total too, so it costs no item more, and Counts reads them with the
// total. A mute writes the thread's map (even empty), an unmute removes
// it, and a write that counts a record of the thread adds to the map only
// on condition that the thread is muted (the map then exists), else on
// condition that it is not: see guardedCounterUpdates.

// mutedPrefix begins the names of the attributes of c#* that keep a muted
// thread's counters.
const mutedPrefix = "mt#"

// mutedAttr returns the name of the attribute of c#* that keeps the
// counters of muted thread t.
func mutedAttr(t string) string { return mutedPrefix + base64.RawURLEncoding.EncodeToString([]byte(t)) }

// mutedKeys returns the keys, in its thread's map, of the Unread and the
// Above of muted counter c.
func mutedKeys(c driver.Counter) (unread, above string) {
	cat := base64.RawURLEncoding.EncodeToString([]byte(c.Category))
	return "u" + cat, "a" + cat
}

// mutedMap returns the map attribute that holds counters cs, all of one
// muted thread.
func mutedMap(cs []driver.Counter) *types.AttributeValueMemberM {
	m := &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}
	for _, c := range cs {
		u, a := mutedKeys(c)
		m.Value[u] = &types.AttributeValueMemberN{Value: strconv.FormatInt(c.Unread, 10)}
		m.Value[a] = &types.AttributeValueMemberN{Value: strconv.FormatInt(c.Above, 10)}
	}
	return m
}

// mutedMaps returns the maps of the muted threads r sets anew (nil for
// none), by attribute name (see mutedAttr).
func mutedMaps(r *driver.MutedReset) map[string]map[string]int64 {
	if r == nil {
		return nil
	}
	out := make(map[string]map[string]int64, len(r.Threads))
	for _, t := range r.Threads {
		out[mutedAttr(t)] = map[string]int64{}
	}
	for _, c := range r.Counters {
		u, a := mutedKeys(c)
		out[mutedAttr(c.Thread)][u], out[mutedAttr(c.Thread)][a] = c.Unread, c.Above
	}
	return out
}

// versionIs returns the condition that a partition's counter version
// (on c#*) is v (none for 0).
func versionIs(v int64) expression.ConditionBuilder {
	if v == 0 {
		return expression.Name(attrVersion).AttributeNotExists()
	}
	return expression.Name(attrVersion).Equal(expression.Value(v))
}

// mutedOf returns the muted threads' counters a user's c#* item av keeps
// (those at zero left out), sorted by key. A map of the prefix that is
// not one, or holds what is not a counter, is ErrInvalidInput.
func mutedOf(p driver.Partition, av map[string]types.AttributeValue) ([]driver.Counter, error) {
	var out []driver.Counter
	for name, v := range av {
		t, m, bad, ok := threadMap(p, name, v, mutedPrefix, "muted")
		if !ok {
			continue
		}
		if m == nil {
			return nil, bad("not a thread's map")
		}
		byCat := map[string]*driver.Counter{}
		for k, n := range m.Value {
			cat, v, what := mapTally(k, n)
			if what != "" {
				return nil, bad(what)
			}
			c := byCat[string(cat)]
			if c == nil {
				c = &driver.Counter{Partition: p, Category: string(cat), Thread: string(t), Muted: true}
				if driver.ValidateCounter(*c) != nil {
					return nil, bad("not a key")
				}
				byCat[string(cat)] = c
			}
			if k[0] == 'u' {
				c.Unread = v
			} else {
				c.Above = v
			}
		}
		for _, c := range byCat {
			if !c.IsZero() {
				out = append(out, *c)
			}
		}
	}
	slices.SortFunc(out, func(a, b driver.Counter) int { return strings.Compare(a.SK(), b.SK()) })
	return out, nil
}

// mutedCond returns the condition that the preferences of a user's c#*
// (attrMuted, see driver.Preferences.Encode) mute thread t, if muted is
// set, else that they do not: her own, a string, holding its token
// (driver.MutedThreadToken). The type is checked as in notOptedOut.
func mutedCond(t string, muted bool) expression.ConditionBuilder {
	name := expression.Name(attrMuted)
	c := expression.And(name.AttributeType(expression.String), expression.Contains(name, driver.MutedThreadToken(t)))
	if muted {
		return c
	}
	return expression.Not(c)
}

// mutesOf returns, of threads, those the preferences of old, a user's
// c#* as a failed condition returned it, mute.
func mutesOf(old map[string]types.AttributeValue, threads map[string]bool) map[string]bool {
	v, _ := old[attrMuted].(*types.AttributeValueMemberS)
	out := make(map[string]bool, len(threads))
	for t := range threads {
		out[t] = v != nil && strings.Contains(v.Value, driver.MutedThreadToken(t))
	}
	return out
}

// mutesChanged reports that the condition of partition p's total failed
// because p's preferences mute other threads than the write took as
// muted: mutes holds them as they are. A write made again with them
// applies their muted counters' changes, or drops them, as it should.
type mutesChanged struct {
	p     driver.Partition
	mutes map[string]bool
}

// Error names the partition.
func (e *mutesChanged) Error() string {
	return "dynamo: the threads muted in " + e.p.PK() + " are not those the write took"
}

// mutedTook returns, by partition, the threads of deltas' muted counters
// with whether a write with mutes takes each as muted: the conditions
// guardedCounterUpdates puts on their partitions' c#*.
func mutedTook(deltas []driver.Counter, mutes map[driver.Partition]map[string]bool) map[driver.Partition]map[string]bool {
	out := map[driver.Partition]map[string]bool{}
	for _, d := range deltas {
		if d.Muted {
			if out[d.Partition] == nil {
				out[d.Partition] = map[string]bool{}
			}
			out[d.Partition][d.Thread] = mutes[d.Partition][d.Thread]
		}
	}
	return out
}

// muteHints remembers, for up to muteHintsSize user partitions, the
// threads a write found muted there (see mutesChanged), so that the next
// write of a muted thread's record takes it as muted from its first
// attempt: a hint only, which the write's condition checks, so a stale
// one costs an attempt more, never a wrong count. It is safe for
// concurrent use.
type muteHints struct {
	mu sync.Mutex
	m  map[driver.Partition]map[string]bool
}

// muteHintsSize bounds the partitions a muteHints remembers: past it, it
// forgets them all and starts again.
const muteHintsSize = 1 << 14

// take returns, for the muted counters of deltas, the threads of each
// partition as h remembers them (muted or not), for a write's first
// attempt.
func (h *muteHints) take(deltas []driver.Counter) map[driver.Partition]map[string]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[driver.Partition]map[string]bool{}
	for _, d := range deltas {
		if d.Muted && h.m[d.Partition][d.Thread] {
			if out[d.Partition] == nil {
				out[d.Partition] = map[string]bool{}
			}
			out[d.Partition][d.Thread] = true
		}
	}
	return out
}

// learn records what a failed write found of p's threads: mutes, as they
// are.
func (h *muteHints) learn(p driver.Partition, mutes map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || len(h.m) >= muteHintsSize {
		h.m = map[driver.Partition]map[string]bool{}
	}
	if h.m[p] == nil {
		h.m[p] = map[string]bool{}
	}
	for t, muted := range mutes {
		if muted {
			h.m[p][t] = true
		} else {
			delete(h.m[p], t)
		}
	}
}

// mutedFailure returns, for a failed condition of p's c#* whose item was
// old, a *mutesChanged if the write took some thread as muted, or not,
// wrongly (took: see mutedTook); else nil (another part of the condition
// failed).
func mutedFailure(p driver.Partition, old map[string]types.AttributeValue, took map[driver.Partition]map[string]bool) error {
	of := took[p]
	if len(of) == 0 {
		return nil
	}
	if are := mutesOf(old, of); !maps.Equal(are, of) {
		return &mutesChanged{p: p, mutes: are}
	}
	return nil
}

// Attributes of a stats item besides the seeds' tallies: its timed
// entries' tallies (see driver.Counter.Snoozed and Pending), Above, and,
// on c#*, the Fence and whether the partition is Bucketed.
const (
	attrAbove = "above"
	attrFence = "seen"
	// attrBucketed marks a shared partition whose time buckets count its
	// records, each category's and each thread's ("bkt" and "bkc", of
	// versions whose buckets had no categories or no threads, read as not
	// bucketed: a Recount buckets it again).
	attrBucketed = "bkh"
	attrMuted    = "muted"
)

// timedAttrs returns the attribute names of the tallies of timed entries,
// with prefix z (snoozed) or q (pending), and their values in t.
func timedAttrs(prefix string, t driver.Tallies) []struct {
	name string
	v    int64
} {
	return []struct {
		name string
		v    int64
	}{{prefix + "p", t.Published}, {prefix + "r", t.Read}, {prefix + "a", t.Archived}, {prefix + "ar", t.ArchivedRead}, {prefix + "h", t.Hidden}}
}

// follow is the condition of an aggregated message's write on its
// thread's own counter: its Latest is latest ("" for none).
type follow struct{ thread, latest string }

// counterUpdate returns the transaction item that adds change d to its
// counter, creating the counter (kind, keys and zero tallies) if missing,
// and does what w asks besides.
func (s *Store) counterUpdate(d driver.Counter, w counterWrite) (types.TransactWriteItem, error) {
	bump, recent, cond := w.bump, w.recent, w.cond
	upd := expression.Add(expression.Name("published"), expression.Value(d.Published))
	if recent != nil {
		upd = upd.Add(expression.Name(recentAttr(recent.add)), expression.Value(stringSet(recent.values))).
			Remove(expression.Name(recentAttr(recent.clear)))
	}
	if hasRead(d) {
		upd = upd.Add(expression.Name("read"), expression.Value(d.Read))
	}
	tallies := []struct {
		name string
		v    int64
	}{{"archived", d.Archived}, {"archivedread", d.ArchivedRead}, {"hidden", d.Hidden}, {attrAbove, d.Above}}
	tallies = append(append(tallies, timedAttrs("z", d.Snoozed)...), timedAttrs("q", d.Pending)...)
	for _, t := range tallies {
		if t.v != 0 {
			upd = upd.Add(expression.Name(t.name), expression.Value(t.v))
		}
	}
	if bump {
		upd = upd.Add(expression.Name(attrVersion), expression.Value(1))
	}
	if isHintChange(d) {
		var c expression.ConditionBuilder
		upd, c = s.hintUpdate(upd, d, w.skipHint != d.Top.IsZero()) // a removal tries the form that leaves it first
		if cond != nil {
			c = expression.And(*cond, c)
		}
		cond = &c
	}
	if d.Thread != "" && d.Group == "" {
		// A thread's own counter has a new Rev at each write, and its
		// tallies again under the names the unread index projects, set
		// from the tallies as they stand (not added to), so that a
		// counter an earlier version wrote, or a copy of one, has them
		// whole from its first write by this one.
		upd = upd.Set(expression.Name(attrRev), expression.Value(newRev()))
		for _, t := range threadTallies(d) {
			upd = upd.Set(expression.Name(t.name), expression.Plus(expression.Name(t.of).IfNotExists(expression.Value(0)), expression.Value(t.v)))
		}
	}
	if d.Latest != "" && d.Group == "" {
		// A thread's Latest only rises: the update is conditional on it
		// (PutMessage writes again without it if the condition fails).
		// The thread's counter is in the unread index under its activity,
		// for the threads' order (driver.Query.Threads).
		upd = upd.Set(expression.Name(attrLatest), expression.Value(d.Latest)).
			Set(expression.Name(attrUnread), expression.Value(activityMark+driver.ActivityKey(d.Latest, d.Thread)))
		c := expression.Or(expression.Name(attrLatest).AttributeNotExists(), expression.Name(attrLatest).LessThan(expression.Value(d.Latest)))
		if f := w.follow; f != nil {
			c = expression.Name(attrLatest).AttributeNotExists()
			if f.latest != "" {
				c = expression.Name(attrLatest).Equal(expression.Value(f.latest))
			}
		}
		if cond != nil {
			c = expression.And(*cond, c)
		}
		cond = &c
	}
	if !w.recounted.IsZero() {
		upd = upd.Set(expression.Name(attrRecounted), expression.Value(w.recounted.Unix()))
	}
	if w.seen != "" {
		upd = upd.Set(expression.Name(attrFence), expression.Value(w.seen))
	}
	if w.bucketed {
		upd = upd.Set(expression.Name(attrBucketed), expression.Value(true))
	}
	for _, name := range slices.Sorted(maps.Keys(w.above)) {
		if n := w.above[name]; n != 0 {
			upd = upd.Add(expression.NameNoDotSplit(name), expression.Value(n))
		}
	}
	for _, path := range slices.Sorted(maps.Keys(w.mutedAdd)) {
		if n := w.mutedAdd[path]; n != 0 {
			upd = upd.Set(expression.Name(path), expression.Plus(expression.Name(path).IfNotExists(expression.Value(0)), expression.Value(n)))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(w.mutedSet)) {
		upd = upd.Set(expression.NameNoDotSplit(name), expression.Value(w.mutedSet[name]))
	}
	for _, name := range w.mutedRemove {
		upd = upd.Remove(expression.NameNoDotSplit(name))
	}
	if len(w.covers) > 0 {
		var c expression.ConditionBuilder
		if cond != nil {
			c = *cond
		}
		for _, t := range slices.Sorted(maps.Keys(w.covers)) {
			upd = w.covers[t].update(t, upd, &c)
		}
		if c.IsSet() {
			cond = &c
		}
	}
	for _, t := range slices.Sorted(maps.Keys(w.mutes)) {
		c := mutedCond(t, w.mutes[t])
		if cond != nil {
			c = expression.And(*cond, c)
		}
		cond = &c
	}
	switch {
	case w.muted == nil:
	case !w.muted.Own:
		upd = upd.Remove(expression.Name(attrMuted))
	default:
		upd = upd.Set(expression.Name(attrMuted), expression.Value(w.muted.Encode()))
	}
	upd = upd.Set(expression.Name("kind"), expression.Value(kindCounter)).
		Set(expression.Name("tenant_key"), expression.Value(d.Partition.Tenant)).
		Set(expression.Name("inbox_key"), expression.Value(d.Partition.Inbox)).
		Set(expression.Name("uid"), expression.Value(d.Partition.User+d.Partition.Group))
	if bump && !d.Partition.IsShared() {
		// A user's c#* is in the unread index, so that an unseen read
		// gets the counter version with the records.
		upd = upd.Set(expression.Name(attrUnread), expression.Value(counterMark))
	}
	b := expression.NewBuilder().WithUpdate(upd)
	if cond != nil {
		b = b.WithCondition(*cond)
	}
	expr, err := b.Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("dynamo: counter update: %w", err)
	}
	u := &types.Update{
		TableName:                 aws.String(s.table),
		Key:                       s.key(d.Partition.PK(), d.SK()),
		UpdateExpression:          expr.Update(),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}
	if w.returnOld || len(w.mutes) > 0 || len(w.covers) > 0 || isHintChange(d) {
		// A receipts' hint's failed condition returns the hint it found
		// (see hintForms).
		u.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	return types.TransactWriteItem{Update: u}, nil
}

// attrTop holds the receipts' hint's marks (driver.Counter.Top) of a
// user's counter of a shared thread: a map of the receipt's mark times,
// as a receipt holds them (readat, ...: epoch seconds), none when Top is
// zero. Its Latest is attrLatest, as a thread's own counter's.
const attrTop = "top"

// hintUpdate adds to upd, the update of a user's counter of her receipts
// of a shared thread, the change d (with a Latest) makes to its
// receipts' hint, and returns the condition that makes it the one the
// Store contract asks for (driver.Counter.ApplyHint). A write (d.Top
// set) raises Latest to d's and sets Top (with TopEntry) on condition
// that the counter is missing or its Latest is at or below d's; a
// removal (Top zero) removes Top on condition that Latest and TopEntry
// are d's. With skip it changes neither, on condition that the other
// form's condition fails. DynamoDB has no conditional assignment: a write
// whose condition fails (hintFailed) is made again in the other form.
func (s *Store) hintUpdate(upd expression.UpdateBuilder, d driver.Counter, skip bool) (expression.UpdateBuilder, expression.ConditionBuilder) {
	latest, id := expression.Name(attrLatest), expression.Value(d.Latest)
	if d.Top.IsZero() {
		c := expression.And(latest.Equal(id), expression.Name(attrTop+".e").Equal(expression.Value(d.TopEntry)))
		if skip {
			return upd, expression.Not(c)
		}
		return upd.Remove(expression.Name(attrTop)), c
	}
	c := expression.Or(expression.NameNoDotSplit(s.o.pk).AttributeNotExists(), latest.LessThanEqual(id))
	if skip {
		return upd, expression.Not(c)
	}
	return upd.Set(latest, id).Set(expression.Name(attrTop), expression.Value(hintMarksOf(d.Top, d.TopEntry))), c
}

// hintMarks are the marks of a receipts' hint (driver.Counter.Top) as
// attrTop holds them.
type hintMarks struct {
	Entry    string `dynamodbav:"e"` // driver.Counter.TopEntry
	ReadAt   *int64 `dynamodbav:"readat,omitempty"`
	Archived *int64 `dynamodbav:"archivedat,omitempty"`
	Deleted  *int64 `dynamodbav:"deletedat,omitempty"`
	Snoozed  *int64 `dynamodbav:"snoozeduntil,omitempty"`
	Interact *int64 `dynamodbav:"interactedat,omitempty"`
}

// topOf returns the Top of counter c as attrTop holds it: nil if zero.
func topOf(c driver.Counter) *hintMarks {
	if c.Top.IsZero() {
		return nil
	}
	h := hintMarksOf(c.Top, c.TopEntry)
	return &h
}

// hintMarksOf returns st, the marks of the receipt of ledger entry entry,
// as attrTop holds them.
func hintMarksOf(st driver.State, entry string) hintMarks {
	return hintMarks{entry, readAt(st.ReadAt), readAt(st.ArchivedAt), readAt(st.DeletedAt), readAt(st.SnoozedUntil), readAt(st.InteractedAt)}
}

// state returns the marks h holds.
func (h hintMarks) state() driver.State {
	at := func(v *int64) time.Time {
		if v == nil {
			return time.Time{}
		}
		return time.Unix(*v, 0).UTC()
	}
	return driver.State{ReadAt: at(h.ReadAt), ArchivedAt: at(h.Archived), DeletedAt: at(h.Deleted), SnoozedUntil: at(h.Snoozed), InteractedAt: at(h.Interact)}
}

// hintFailed reports that the conditions of the receipts' hints of the
// counters at keys (partition key, sort key) failed, on the hints seen
// (one for each key): the write is made again with each in the other
// form.
type hintFailed struct {
	keys [][2]string
	seen []hintSeen
}

// Error names the counters.
func (e *hintFailed) Error() string {
	return "dynamo: the receipts' hint of counter " + e.names() + " moved"
}

// names returns the keys of the counters, as pk/sk, comma-separated.
func (e *hintFailed) names() string {
	names := make([]string, len(e.keys))
	for i, k := range e.keys {
		names[i] = k[0] + "/" + k[1]
	}
	return strings.Join(names, ", ")
}

// flip makes the write again with each hint e names in the other form.
func (e *hintFailed) flip(skips map[[2]string]bool) {
	for _, k := range e.keys {
		skips[k] = !skips[k]
	}
}

// withHintsFailed returns err, the meaning of the first failed condition
// of a transaction, with, if it is a receipts' hint's (hintFailed), the
// keys of every other hint among the later items (reasons, with their
// meanings) whose condition failed too: the transaction is made again
// once with all of them in the other form, not once per hint (a Mark of
// receipts of many threads, each below its hint's Latest, would else
// take a transaction per thread, and run out of attempts).
func withHintsFailed(err error, reasons []types.CancellationReason, meanings []onFail) error {
	hint, ok := err.(*hintFailed)
	if !ok {
		return err
	}
	for i, r := range reasons {
		if aws.ToString(r.Code) != reasonConditionFailed || i >= len(meanings) || meanings[i] == nil {
			continue
		}
		if other, ok := meanings[i](r.Item).(*hintFailed); ok {
			hint.keys, hint.seen = append(hint.keys, other.keys...), append(hint.seen, other.seen...)
		}
	}
	return hint
}

// hintKey returns the key of counter c as hintFailed names it.
func hintKey(c driver.Counter) [2]string { return [2]string{c.Partition.PK(), c.SK()} }

// hintMeaning returns, for it, an item of a transaction of counter
// updates, the meaning of its condition's failure if it is the update of
// a receipts' hint (hintFailed); ok is false for any other item.
func (s *Store) hintMeaning(it types.TransactWriteItem) (onFail, bool) {
	if it.Update == nil || it.Update.ConditionExpression == nil {
		return nil, false
	}
	pk, _ := it.Update.Key[s.o.pk].(*types.AttributeValueMemberS)
	sk, _ := it.Update.Key[s.o.sk].(*types.AttributeValueMemberS)
	if pk == nil || sk == nil {
		return nil, false
	}
	c, err := driver.ParseCounterSK(sk.Value)
	if err != nil || c.Thread == "" || c.Group == "" {
		return nil, false
	}
	key := [2]string{pk.Value, sk.Value}
	return func(old map[string]types.AttributeValue) error {
		return &hintFailed{keys: [][2]string{key}, seen: []hintSeen{hintSeenOf(old)}}
	}, true
}

// maxHintFlips bounds how many times one write is made again because a
// receipts' hint it changes moved (see hintFailed): each time another
// write changed that counter between.
const maxHintFlips = 8

// recentChange is what a Mark changes in a user's recent receipts: the
// values added to slot add, and slot clear emptied.
type recentChange struct {
	add, clear int
	values     []string
}

// recentChanges returns the recent receipts marks create, by partition.
func recentChanges(marks []driver.Mark) map[driver.Partition]*recentChange {
	out := map[driver.Partition]*recentChange{}
	for _, mk := range marks {
		if !mk.RecordsRecent() {
			continue
		}
		p := mk.Key.Partition
		c := out[p]
		if c == nil {
			c = &recentChange{}
			c.add, c.clear = driver.RecentSlots(mk.Now)
			out[p] = c
		}
		c.values = append(c.values, recentValue(driver.Key{Partition: mk.Shared, ID: mk.Key.ID}))
	}
	return out
}

// counterUpdates returns the transaction items adding deltas (one per
// counter, as the Store contract promises), each partition's c#* moving
// its version (and, for a partition in recent, its recent receipts): a
// partition whose total deltas leave out gets a change of zero to its
// total. Two changes to one counter are ErrInvalidInput.
func (s *Store) counterUpdates(deltas []driver.Counter, recent map[driver.Partition]*recentChange) ([]types.TransactWriteItem, error) {
	return s.guardedCounterUpdates(deltas, recent, nil, nil, nil, nil)
}

// guardedCounterUpdates is counterUpdates with totals[p] what the update
// of partition p's c#* does besides (its condition, the Fence it
// records, ...); a partition of totals gets a c#* update even without
// deltas. The c#* updates come first, in the order of deltas'
// partitions. The changes of muted threads' counters (driver.Counter.Muted)
// apply to the threads mutes[p] holds as muted, on condition that they
// are, and are dropped for the others, on condition that they are not: a
// write whose condition fails so (mutedFailure) is made again with the
// threads as they are (nil mutes: none muted). The changes of covered
// threads' counters (driver.Counter.Covered) go to their partitions' c#*
// likewise, those of records taken as covered by the bounds of bounds
// (see coveredWrites), and the cover marks of totals (counterWrite.moves)
// with them; those of a group's thread go to the user's counter of the
// group (c#*#<group>), which gets an update even without deltas, as does
// one that totals' groupConds name. The changes of receipts' hints are
// made in the form skips holds (see hintUpdate).
func (s *Store) guardedCounterUpdates(deltas []driver.Counter, recent map[driver.Partition]*recentChange, totals map[driver.Partition]counterWrite, mutes map[driver.Partition]map[string]bool, bounds map[driver.Partition]map[driver.GroupThread]string, skips map[[2]string]bool) ([]types.TransactWriteItem, error) {
	if err := driver.ValidateDeltas(deltas); err != nil {
		return nil, err
	}
	// A covered thread's counter goes to its partition's c#* (see
	// coveredAttr), a group's thread's to the partition's c#*#<group>.
	covered, _ := coveredWrites(deltas, movesOf(totals), bounds)
	covers := map[driver.Partition]map[string]map[string]*coverWrite{} // by partition, group and thread
	groups := map[driver.Partition]map[string]bool{}                   // the counters of groups to update
	addGroup := func(p driver.Partition, g string) {
		if groups[p] == nil {
			groups[p] = map[string]bool{}
		}
		groups[p][g] = true
	}
	for p, ws := range covered {
		covers[p] = map[string]map[string]*coverWrite{}
		for t, w := range ws {
			if covers[p][t.Group] == nil {
				covers[p][t.Group] = map[string]*coverWrite{}
			}
			covers[p][t.Group][t.Thread] = w
			if t.Group != "" {
				addGroup(p, t.Group)
			}
		}
	}
	for p, w := range totals {
		for g := range w.groupConds {
			addGroup(p, g)
		}
	}
	deltas = slices.DeleteFunc(slices.Clone(deltas), func(d driver.Counter) bool { return d.Covered })
	for _, d := range deltas {
		if d.Category == "" && d.Group != "" && d.Thread == "" && !d.Muted {
			delete(groups[d.Partition], d.Group) // changed already
		}
	}
	for _, p := range slices.SortedFunc(maps.Keys(groups), comparePartitions) {
		for _, g := range slices.Sorted(maps.Keys(groups[p])) {
			deltas = append(deltas, driver.Counter{Partition: p, Group: g})
		}
	}
	// A muted thread's counter goes to its partition's c#* (see
	// mutedAttr), if the write takes the thread as muted.
	took := map[driver.Partition]map[string]bool{}
	mutedAdd := map[driver.Partition]map[string]int64{}
	deltas = slices.DeleteFunc(slices.Clone(deltas), func(d driver.Counter) bool {
		if !d.Muted {
			return false
		}
		p := d.Partition
		if took[p] == nil {
			took[p], mutedAdd[p] = map[string]bool{}, map[string]int64{}
		}
		muted := mutes[p][d.Thread]
		took[p][d.Thread] = muted
		if muted {
			u, a := mutedKeys(d)
			mutedAdd[p][mutedAttr(d.Thread)+"."+u] += d.Unread
			mutedAdd[p][mutedAttr(d.Thread)+"."+a] += d.Above
		}
		return true
	})
	total := map[driver.Partition]bool{} // partitions whose c#* deltas change
	for _, d := range deltas {
		if d.Category == "" && d.Group == "" && d.Thread == "" {
			total[d.Partition] = true
		}
	}
	// A category's Above goes to its partition's c#* (see
	// categoryAboveAttr); a category's change of nothing else writes no
	// item of its own.
	above := map[driver.Partition]map[string]int64{}
	kept := make([]driver.Counter, 0, len(deltas))
	for _, d := range deltas {
		if d.Category != "" && d.Above != 0 {
			if above[d.Partition] == nil {
				above[d.Partition] = map[string]int64{}
			}
			above[d.Partition][categoryAboveAttr(d)] += d.Above
			if d.Above = 0; d == (driver.Counter{Partition: d.Partition, Category: d.Category, Group: d.Group}) {
				continue
			}
		}
		kept = append(kept, d)
	}
	deltas = kept
	// Every partition changed, or asked for, gets its c#* update.
	withTotal := func(p driver.Partition) {
		if !total[p] {
			total[p] = true
			deltas = append(deltas, driver.Counter{Partition: p})
		}
	}
	for _, d := range slices.Clone(deltas) {
		withTotal(d.Partition)
	}
	for _, ps := range [][]driver.Partition{slices.Collect(maps.Keys(above)), slices.Collect(maps.Keys(recent)), slices.Collect(maps.Keys(totals)), slices.Collect(maps.Keys(took)), slices.Collect(maps.Keys(covers))} {
		for _, p := range ps {
			withTotal(p)
		}
	}
	var out []types.TransactWriteItem
	for _, d := range deltas {
		isTotal := d.Category == "" && d.Group == "" && d.Thread == ""
		w := counterWrite{bump: isTotal, skipHint: skips[hintKey(d)]}
		switch {
		case isTotal:
			w = totals[d.Partition]
			w.bump, w.recent, w.above = true, recent[d.Partition], above[d.Partition]
			w.mutes, w.mutedAdd = took[d.Partition], mutedAdd[d.Partition]
			w.covers = covers[d.Partition][""]
		case d.Thread != "" && d.Group == "" && !d.Muted && totals[d.Partition].follow != nil && totals[d.Partition].follow.thread == d.Thread:
			w.follow = totals[d.Partition].follow
		case d.Category == "" && d.Group != "" && d.Thread == "" && !d.Partition.IsShared():
			// A user's counter of a group: her positions in its threads.
			w.covers = covers[d.Partition][d.Group]
			if c, ok := totals[d.Partition].groupConds[d.Group]; ok {
				w.cond, w.returnOld = &c, true
			}
		}
		it, err := s.counterUpdate(d, w)
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}

// seenBelow returns the condition that a user partition's seen watermark
// (its Fence, on c#*) is below id: the records above it count in Above.
func seenBelow(id string) expression.ConditionBuilder {
	return expression.Or(expression.Name(attrFence).AttributeNotExists(), expression.Name(attrFence).LessThan(expression.Value(id)))
}

// notOptedOut returns the condition that a user partition's preferences
// (attrMuted, see driver.Preferences.Encode) do not hold token, an
// opt-out (driver.OptOutToken) in a string; with byDefault, that the
// partition has preferences of its own too, as a string (the defaults in
// effect opt out). DynamoDB's contains also finds an element of a set or
// a list, another program's value: the type is checked, so that the
// condition fails exactly when optsOut explains it (else PutMessage would
// write again and again).
func notOptedOut(token string, byDefault bool) expression.ConditionBuilder {
	muted := expression.Name(attrMuted)
	if byDefault {
		return expression.And(muted.AttributeType(expression.String), expression.Not(expression.Contains(muted, token)))
	}
	return expression.Not(expression.And(muted.AttributeType(expression.String), expression.Contains(muted, token)))
}

// optsOut reports whether old, a user's c#* as a failed condition
// returned it, has preferences that hold token, an opt-out, or, with
// byDefault, none of its own.
func optsOut(old map[string]types.AttributeValue, token string, byDefault bool) bool {
	v, ok := old[attrMuted].(*types.AttributeValueMemberS)
	if !ok {
		return byDefault // no own preferences (or no c#* at all)
	}
	return strings.Contains(v.Value, token)
}

// seenIs returns the condition that a user partition's Fence is w ("" for
// none).
func seenIs(w string) expression.ConditionBuilder {
	if w == "" {
		return expression.Name(attrFence).AttributeNotExists()
	}
	return expression.Name(attrFence).Equal(expression.Value(w))
}

// fenceOf returns the Fence of a c#* item as a failed condition returned
// it ("" for none).
func fenceOf(old map[string]types.AttributeValue) string {
	if v, ok := old[attrFence].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// withoutAbove returns deltas with no Above changes.
func withoutAbove(deltas []driver.Counter) []driver.Counter {
	out := slices.Clone(deltas)
	for i := range out {
		out[i].Above = 0
	}
	return out
}

// withoutAboveOf returns deltas with no Above changes of partition p.
func withoutAboveOf(deltas []driver.Counter, p driver.Partition) []driver.Counter {
	out := slices.Clone(deltas)
	for i := range out {
		if out[i].Partition == p {
			out[i].Above = 0
		}
	}
	return out
}

// hasAbove reports whether deltas change an Above.
func hasAbove(deltas []driver.Counter) bool {
	for _, d := range deltas {
		if d.Above != 0 {
			return true
		}
	}
	return false
}

// Stats reads a partition's stats records, seen watermark, tombstones,
// day buckets and the ledger and timed entries whose time is at or before
// q.Now with one strongly consistent Query of the sort keys from c# (b#,
// the threads' counters, with q.Threads) to e#<now>: c#* and
// c#<category>, cd#<day>, cs#seen, d#<id>, an earlier version's
// dq#<deliver at>#<id>#<tag> and dz#<until>#<id>#<tag>, then
// e#<time>#<id>#<tag> and e#<time>#<id>#<tag>#q|z up to now. A read past
// one page (1 MB) is not one view of the partition: it is checked against
// the version of c#*, read again after it, and read again whole when a
// write came between. With q.Hour it reads that hour's bucket alone;
// with q.Keys, the counters by key (see counters). A user's c#* holds her
// muted and covered threads' counters (see mutedAttr, coveredAttr): they
// come with it.
func (s *Store) Stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	if err := driver.ValidateStatsQuery(q); err != nil {
		return driver.Stats{}, err
	}
	if !q.Hour.IsZero() {
		hb, err := s.hourBucket(ctx, q.Partition, q.Hour)
		return driver.Stats{Hour: hb}, err
	}
	if len(q.Keys) > 0 {
		return s.counters(ctx, q)
	}
	for range statsAttempts {
		st, pages, err := s.stats(ctx, q)
		if err != nil || pages <= 1 {
			return st, err
		}
		items, err := s.batchGet(ctx, []map[string]types.AttributeValue{s.key(q.Partition.PK(), driver.CounterSK("", ""))}, true)
		if err != nil {
			return driver.Stats{}, opError("stats", err)
		}
		var ver int64
		if len(items) == 1 {
			if _, ver, _, err = s.decodeCounter(q.Partition, items[0]); err != nil {
				return driver.Stats{}, err
			}
		}
		if ver == st.Version {
			return st, nil
		}
	}
	return driver.Stats{}, fmt.Errorf("dynamo: stats of %s: the partition kept changing while it was read: %w", q.Partition.PK(), driver.ErrConflict)
}

// statsAttempts bounds the reads of one Stats of a partition past one
// page whose writes keep coming between its pages.
const statsAttempts = 4

// stats is one read of Stats: the stats and how many pages they took.
func (s *Store) stats(ctx context.Context, q driver.StatsQuery) (driver.Stats, int, error) {
	p, now := q.Partition, q.Now
	from := driver.CounterPrefix
	if q.Threads {
		from = driver.ThreadStatsPrefix
	}
	kc := expression.Key(s.o.pk).Equal(expression.Value(p.PK())).
		And(expression.Key(s.o.sk).Between(expression.Value(from), expression.Value(driver.LedgerBound(now))))
	items, pages, err := s.queryPages(ctx, kc, nil)
	if err != nil {
		return driver.Stats{}, 0, opError("stats", err)
	}
	var st driver.Stats
	var above map[driver.Counter]int64
	var positions []driver.Counter // the covered counters, all of them
	for _, av := range items {
		_, sk, err := s.itemKey(av)
		if err != nil {
			return driver.Stats{}, 0, err
		}
		switch {
		case strings.HasPrefix(sk, driver.CounterPrefix), strings.HasPrefix(sk, driver.ThreadStatsPrefix):
			c, ver, recent, err := s.decodeCounter(p, av)
			if err != nil {
				return driver.Stats{}, 0, err
			}
			st.Counters = append(st.Counters, c)
			if keepsPositions(c) {
				// Her counter of a group keeps her positions in its
				// threads (see coveredAttr).
				covered, err := coveredOf(p, c.Group, av)
				if err != nil {
					return driver.Stats{}, 0, err
				}
				st.Counters = append(st.Counters, covered...)
				positions = append(positions, covered...)
			}
			if c.Category == "" && c.Group == "" && c.Thread == "" {
				st.Version = ver
				if n, ok := av[attrRecounted].(*types.AttributeValueMemberN); ok {
					r, err := strconv.ParseInt(n.Value, 10, 64)
					if err != nil {
						return driver.Stats{}, 0, fmt.Errorf("dynamo: counter %s/%s: recounted %q: %w", p.PK(), sk, n.Value, err)
					}
					st.Recounted = time.Unix(r, 0).UTC()
				}
				if !p.IsShared() {
					st.Recent = recent
					st.Fence = fenceOf(av)
					if st.Preferences, err = s.decodePrefs(p, av); err != nil {
						return driver.Stats{}, 0, err
					}
					if above, err = categoryAbove(p, av); err != nil {
						return driver.Stats{}, 0, err
					}
					muted, err := mutedOf(p, av)
					if err != nil {
						return driver.Stats{}, 0, err
					}
					covered, err := coveredOf(p, "", av)
					if err != nil {
						return driver.Stats{}, 0, err
					}
					st.Counters = append(append(st.Counters, muted...), covered...)
					positions = append(positions, covered...)
				} else {
					_, st.Bucketed = av[attrBucketed]
				}
			}
		case strings.HasPrefix(sk, driver.DayBucketPrefix):
			d, err := s.decodeDay(p, sk, av)
			if err != nil {
				return driver.Stats{}, 0, err
			}
			st.Days = append(st.Days, d)
		case sk == driver.SeenSK:
			var it seenItem
			if err := attributevalue.UnmarshalMap(av, &it); err != nil {
				return driver.Stats{}, 0, fmt.Errorf("dynamo: decode seen watermark of %s: %w", p.PK(), err)
			}
			st.Seen = it.Seen
		case strings.HasPrefix(sk, driver.TombstonePrefix):
			t, err := s.decodeTombstone(p, av)
			if err != nil {
				return driver.Stats{}, 0, err
			}
			st.Tombstones = append(st.Tombstones, t)
		case strings.HasPrefix(sk, driver.SnoozePrefix), strings.HasPrefix(sk, driver.PendingPrefix), driver.IsTimedKey(sk):
			e, err := s.decodeTimed(p, av)
			if err != nil {
				return driver.Stats{}, 0, err
			}
			switch {
			case driver.IsTimedKey(sk):
				st.Due = append(st.Due, e)
			case strings.HasPrefix(sk, driver.SnoozePrefix):
				st.Snoozed = append(st.Snoozed, e)
			default:
				st.Pending = append(st.Pending, e)
			}
		case strings.HasPrefix(sk, driver.LedgerPrefix):
			e, err := s.decodeEntry(p, av)
			if err != nil {
				return driver.Stats{}, 0, err
			}
			st.Expired = append(st.Expired, e)
		}
	}
	s.covers.learnStats(p, positions, anyThread)
	st.Counters = withCategoryAbove(st.Counters, above, nil)
	return st, pages, nil
}

// keepsPositions reports whether c, a counter as read, is a user's
// counter of a group (c#*#<group>), which keeps her read positions in
// the group's threads (see coveredAttr).
func keepsPositions(c driver.Counter) bool {
	return c.Category == "" && c.Group != "" && c.Group != driver.PublicGroup && c.Thread == "" && !c.Partition.IsShared() && !c.Covered && !c.Muted
}

// comparePartitions orders partitions by key, for the items of a
// transaction to come in one order.
func comparePartitions(a, b driver.Partition) int { return strings.Compare(a.PK(), b.PK()) }

// decodeCounter returns the counter of a stats item of p, its version
// and its recent receipts.
func (s *Store) decodeCounter(p driver.Partition, av map[string]types.AttributeValue) (driver.Counter, int64, []driver.Key, error) {
	_, sk, err := s.itemKey(av)
	if err != nil {
		return driver.Counter{}, 0, nil, err
	}
	var it counterItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return driver.Counter{}, 0, nil, fmt.Errorf("dynamo: decode counter %s/%s: %w: %v", p.PK(), sk, driver.ErrInvalidInput, err)
	}
	c, err := driver.ParseCounterSK(sk)
	if err == nil && it.Latest != "" {
		err = driver.ValidateMessageID(it.Latest)
	}
	if err != nil {
		return driver.Counter{}, 0, nil, fmt.Errorf("dynamo: counter %s/%s: %w", p.PK(), sk, err)
	}
	c.Partition, c.Latest = p, it.Latest
	if it.Top != nil && c.Latest != "" && c.Group != "" {
		c.Top, c.TopEntry = it.Top.state(), it.Top.Entry
	}
	if err := driver.ValidateCounter(c); err != nil {
		return driver.Counter{}, 0, nil, fmt.Errorf("dynamo: counter %s/%s: %w", p.PK(), sk, err)
	}
	c.Published, c.Read, c.Archived, c.ArchivedRead, c.Hidden = it.Published, it.Read, it.Archived, it.ArchivedRead, it.Hidden
	c.Above = it.Above
	c.Snoozed = driver.Tallies{Published: it.ZP, Read: it.ZR, Archived: it.ZA, ArchivedRead: it.ZAR, Hidden: it.ZH}
	c.Pending = driver.Tallies{Published: it.QP, Read: it.QR, Archived: it.QA, ArchivedRead: it.QAR, Hidden: it.QH}
	return c, it.Ver, it.recentKeys(p), nil
}

// decodePrefs returns the preferences a user's c#* item av holds: its
// muted groups and categories and the categories opted out of as one
// string (driver.Preferences.Encode), so that a condition compares them
// as one value. What holds no such string is ErrInvalidInput.
func (s *Store) decodePrefs(p driver.Partition, av map[string]types.AttributeValue) (driver.Preferences, error) {
	v, ok := av[attrMuted].(*types.AttributeValueMemberS)
	if !ok {
		if av[attrMuted] != nil {
			return driver.Preferences{}, fmt.Errorf("dynamo: preferences of %s: %w: %T, not a string", p.PK(), driver.ErrInvalidInput, av[attrMuted])
		}
		return driver.Preferences{}, nil
	}
	prefs, err := driver.DecodePreferences(v.Value)
	if err != nil {
		return driver.Preferences{}, fmt.Errorf("dynamo: preferences of %s: %w", p.PK(), err)
	}
	prefs.Own = true // present, even "": hers
	return prefs, nil
}

// setPreferences applies preferences mark mk (valid, alone) in one
// transaction: an Update of its partition's c#* that replaces the
// preferences (Encode, "" for her own that set nothing; removed for none
// of her own) on condition that they are mk's From (else
// ErrStateChanged), and adds 1 to its version, creating it at zero
// if missing; and a Put of the partition's preferences item
// (driver.PreferencesSK, kind UP) with the new groups, whose INSERT or
// MODIFY record on the table's stream makes the change's event.
func (s *Store) setPreferences(ctx context.Context, mk driver.Mark) error {
	p := mk.Key.Partition
	from, to := mk.Preferences.From, mk.Preferences.To
	cond := expression.Name(attrMuted).AttributeNotExists()
	if from.Own {
		cond = expression.Name(attrMuted).Equal(expression.Value(from.Encode()))
	}
	if mk.Versioned {
		// The muted counters were counted at that version.
		cond = expression.And(cond, versionIs(mk.Version))
	}
	// The muted threads' counters: written for a thread muted anew,
	// removed for one no longer muted.
	w := counterWrite{bump: true, cond: &cond, muted: &to, mutedSet: mutedMaps(mk.Muted)}
	for _, t := range from.MutedThreads {
		if !to.MutesThread(t) {
			w.mutedRemove = append(w.mutedRemove, mutedAttr(t))
		}
	}
	total, err := s.counterUpdate(driver.Counter{Partition: p}, w)
	if err != nil {
		return err
	}
	var muted *string
	if to.Own {
		m := to.Encode()
		muted = &m
	}
	item, err := s.item(p.PK(), driver.PreferencesSK, prefsItem{Kind: kindPrefs, Muted: muted, TenantKey: p.Tenant, InboxKey: p.Inbox, UID: p.User}, time.Time{})
	if err != nil {
		return err
	}
	changed := func(map[string]types.AttributeValue) error {
		return fmt.Errorf("%w: preferences of %s are not those read", driver.ErrStateChanged, p.PK())
	}
	if err := s.transact(ctx, "mark", []types.TransactWriteItem{total, {Put: &types.Put{TableName: aws.String(s.table), Item: item}}}, []onFail{changed, nil}); err != nil {
		return err
	}
	mutes := map[string]bool{}
	for _, t := range append(slices.Clone(from.MutedThreads), to.MutedThreads...) {
		mutes[t] = to.Own && to.MutesThread(t)
	}
	s.hints.learn(p, mutes)
	return nil
}

// queryAll returns every item matching key condition kc, strongly
// consistent, paging to the end; projection limits the attributes when
// set.
func (s *Store) queryAll(ctx context.Context, kc expression.KeyConditionBuilder, projection *expression.ProjectionBuilder) ([]map[string]types.AttributeValue, error) {
	items, _, err := s.queryPages(ctx, kc, projection)
	return items, err
}

// queryPages is queryAll, which also reports how many pages it read.
func (s *Store) queryPages(ctx context.Context, kc expression.KeyConditionBuilder, projection *expression.ProjectionBuilder) ([]map[string]types.AttributeValue, int, error) {
	b := expression.NewBuilder().WithKeyCondition(kc)
	if projection != nil {
		b = b.WithProjection(*projection)
	}
	expr, err := b.Build()
	if err != nil {
		return nil, 0, err
	}
	pages := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    expr.KeyCondition(),
		ProjectionExpression:      expr.Projection(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ConsistentRead:            aws.Bool(true),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	})
	var out []map[string]types.AttributeValue
	n := 0
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, n, err
		}
		n++
		out = append(out, page.Items...)
	}
	return out, n, nil
}

// Repair adopts r.Adopt's records, each with one transaction (an Update
// setting the ledger attribute on condition that the item exists with the
// read state given, and a Put of its entry; a failed condition skips it).
// With r.Reset it then replaces p's counters: it reads the keys of p's
// stats records and writes the new ones and deletes the others in one
// transaction, whose Put of c#* (with the next version) is conditional on
// the version being r.Version, and each write and delete on the counter's
// tallies being r.Before's (else ErrConflict). A partition with more
// than 99 categories takes several transactions, each checking the
// version, the c#* Put last; then a concurrent write can leave some
// categories reset and others not until the next Recount.
func (s *Store) Repair(ctx context.Context, p driver.Partition, r driver.Repair) error {
	// keep holds the sort keys of the counters written (true once listed);
	// the total is always written, listed or not.
	keep := map[string]bool{driver.CounterSK("", ""): false}
	var total *driver.Counter
	var writes []types.TransactWriteItem
	resetAbove := map[string]int64{}
	resetMuted := map[string][]driver.Counter{}
	resetCovered := map[driver.GroupThread][]driver.Counter{}
	groupItems := map[string]map[string]types.AttributeValue{} // a user's counters of groups, by group
	before := make(map[string]driver.Counter, len(r.Before))
	for _, c := range r.Before {
		before[c.SK()] = c
	}
	for _, c := range r.Counters {
		if c.Partition != p {
			return fmt.Errorf("%w: counter of %s reset in %s", driver.ErrInvalidInput, c.Partition.PK(), p.PK())
		}
		if err := driver.ValidateCounter(c); err != nil {
			return err
		}
		sk := c.SK()
		if keep[sk] {
			return fmt.Errorf("%w: two counters %s", driver.ErrInvalidInput, sk)
		}
		keep[sk] = true
		if c.Category == "" && c.Group == "" && c.Thread == "" {
			total = &c
			continue
		}
		if c.Muted {
			if r.Preferences.Keeps(c) {
				resetMuted[c.Thread] = append(resetMuted[c.Thread], c) // kept on c#* (see mutedAttr)
			}
			continue
		}
		if c.Covered {
			if p.IsShared() || c.Of != "" {
				return fmt.Errorf("%w: covered counter %s reset in %s", driver.ErrInvalidInput, sk, p.PK())
			}
			t := driver.GroupThread{Group: c.Group, Thread: c.Thread}
			resetCovered[t] = append(resetCovered[t], c) // kept on c#*, or c#*#<group> (see coveredAttr)
			continue
		}
		if c.Above != 0 && c.Category != "" {
			// Kept on c#* (see categoryAboveAttr).
			resetAbove[categoryAboveAttr(c)] = c.Above
			c.Above = 0
		}
		av, err := s.counterItem(c, 0)
		if err != nil {
			return err
		}
		if keepsPositions(c) {
			groupItems[c.Group] = av // written with her positions, below
			continue
		}
		put, err := s.conditionalPut(av, s.talliesAsRead(before, sk))
		if err != nil {
			return err
		}
		writes = append(writes, types.TransactWriteItem{Put: put})
	}
	// The reset keeps the read positions in groups' threads, read with
	// r.Version, each with its counters, on her counter of the group (see
	// coveredAttr), written even if the reset has no tallies of the
	// group: a thread's counters without a position are none.
	for _, t := range slices.SortedFunc(maps.Keys(resetCovered), compareThreads) {
		if t.Group == "" {
			continue
		}
		name, m := coveredReset(t.Thread, resetCovered[t])
		if m == nil {
			continue
		}
		av := groupItems[t.Group]
		if av == nil {
			c := driver.Counter{Partition: p, Group: t.Group}
			var err error
			if av, err = s.counterItem(c, 0); err != nil {
				return err
			}
			keep[c.SK()] = true
			groupItems[t.Group] = av
		}
		av[name] = m
	}
	for _, g := range slices.Sorted(maps.Keys(groupItems)) {
		put, err := s.conditionalPut(groupItems[g], s.talliesAsRead(before, driver.CounterSK("", g)))
		if err != nil {
			return err
		}
		writes = append(writes, types.TransactWriteItem{Put: put})
	}
	if len(r.AdoptAs) != len(r.Adopt) {
		return fmt.Errorf("%w: %d records to adopt, %d entries", driver.ErrInvalidInput, len(r.Adopt), len(r.AdoptAs))
	}
	if err := driver.ValidateRepairPreferences(p, r); err != nil {
		return err
	}
	if err := driver.ValidateRepairBuckets(r); err != nil {
		return err
	}
	adopted := make([]driver.Record, len(r.Adopt))
	for i, rec := range r.Adopt {
		if rec.Partition != p {
			return fmt.Errorf("%w: record of %s adopted in %s", driver.ErrInvalidInput, rec.Partition.PK(), p.PK())
		}
		adopted[i] = rec
		adopted[i].Entry = r.AdoptAs[i]
		if _, err := s.ledgerEntry(adopted[i]); err != nil {
			return err
		}
	}
	for i, rec := range r.Adopt {
		if err := s.adopt(ctx, rec, adopted[i]); err != nil {
			return err
		}
	}
	for chunk := range slices.Chunk(r.Drop, maxTransactItems) {
		var dels []types.TransactWriteItem
		for _, sk := range chunk {
			if !driver.IsTimedKey(sk) {
				return fmt.Errorf("%w: %q is no timed entry", driver.ErrInvalidInput, sk)
			}
			dels = append(dels, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: s.key(p.PK(), sk)}})
		}
		if err := s.transact(ctx, "repair", dels, make([]onFail, len(dels))); err != nil {
			return err
		}
	}
	if !r.Reset && !r.Stamp {
		return nil
	}
	versionCond := versionIs(r.Version)
	conflict := func(map[string]types.AttributeValue) error {
		return fmt.Errorf("%w: counters of %s changed since version %d", driver.ErrConflict, p.PK(), r.Version)
	}
	if !r.Reset {
		return s.stamp(ctx, p, r.Recounted, versionCond, conflict)
	}
	if total == nil {
		total = &driver.Counter{Partition: p}
	}
	if p.IsShared() {
		buckets, err := s.bucketItems(p, r.Days, r.Hours, rand.Int64())
		if err != nil {
			return err
		}
		for _, it := range buckets {
			_, sk, _ := s.itemKey(it)
			keep[sk] = true
			writes = append(writes, types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: it}})
		}
	}
	proj := expression.NamesList(expression.NameNoDotSplit(s.o.pk), expression.NameNoDotSplit(s.o.sk))
	var existing []map[string]types.AttributeValue
	for _, prefix := range []string{driver.ThreadStatsPrefix, driver.CounterPrefix, driver.DayBucketPrefix} {
		kc := expression.Key(s.o.pk).Equal(expression.Value(p.PK())).And(expression.Key(s.o.sk).BeginsWith(prefix))
		items, err := s.queryAll(ctx, kc, &proj)
		if err != nil {
			return opError("repair", err)
		}
		existing = append(existing, items...)
	}
	for _, av := range existing {
		pk, sk, err := s.itemKey(av)
		if err != nil {
			return err
		}
		if strings.HasPrefix(sk, driver.DayBucketPrefix) {
			if _, kept := keep[sk]; !kept {
				writes = append(writes, types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: s.key(pk, sk)}})
			}
			continue
		}
		if _, kept := keep[sk]; !kept {
			del, err := s.conditionalDelete(s.key(pk, sk), s.talliesAsRead(before, sk))
			if err != nil {
				return err
			}
			writes = append(writes, types.TransactWriteItem{Delete: del})
		}
	}
	totalItem, err := s.counterItem(*total, r.Version+1)
	if err != nil {
		return err
	}
	if r.Seen != "" && !p.IsShared() {
		totalItem[attrFence] = &types.AttributeValueMemberS{Value: r.Seen}
	}
	if p.IsShared() {
		totalItem[attrBucketed] = &types.AttributeValueMemberBOOL{Value: true}
	}
	for name, n := range resetAbove {
		totalItem[name] = &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
	}
	if !p.IsShared() {
		totalItem[attrUnread] = &types.AttributeValueMemberS{Value: counterMark}
		if r.Preferences.Own {
			// The reset keeps the preferences, read with r.Version, and
			// a map for each thread they mute (see mutedAttr).
			totalItem[attrMuted] = &types.AttributeValueMemberS{Value: r.Preferences.Encode()}
			for _, t := range r.Preferences.MutedThreads {
				totalItem[mutedAttr(t)] = mutedMap(resetMuted[t])
			}
		}
		// The reset keeps the read positions of direct threads, read
		// with r.Version, each with its counters (see coveredAttr): a
		// thread's counters without a position are none.
		for t, cs := range resetCovered {
			if name, m := coveredReset(t.Thread, cs); t.Group == "" && m != nil {
				totalItem[name] = m
			}
		}
	}
	if !r.Recounted.IsZero() {
		totalItem[attrRecounted] = &types.AttributeValueMemberN{Value: strconv.FormatInt(r.Recounted.Unix(), 10)}
	}
	if len(r.Recent) > 0 {
		// The reset keeps the recent receipts (read with r.Version), in
		// the slot of its time.
		add, _ := driver.RecentSlots(r.Now)
		values := make(stringSet, len(r.Recent))
		for i, k := range r.Recent {
			values[i] = recentValue(k)
		}
		totalItem[recentAttr(add)] = &types.AttributeValueMemberSS{Value: values}
	}
	putTotal, err := s.conditionalPut(totalItem, versionCond.And(s.talliesAsRead(before, driver.CounterSK("", ""))))
	if err != nil {
		return err
	}
	check, err := s.versionCheck(p, versionCond)
	if err != nil {
		return err
	}
	s.forms.forget(p) // the hints it remembers of p are about to go
	if !p.IsShared() {
		s.covers.learnStats(p, r.Counters, anyThread)
	}
	for {
		n := min(len(writes), maxTransactItems-1)
		items := append([]types.TransactWriteItem(nil), writes[:n]...)
		writes = writes[n:]
		last := len(writes) == 0
		if last {
			items = append([]types.TransactWriteItem{{Put: putTotal}}, items...)
		} else {
			items = append([]types.TransactWriteItem{{ConditionCheck: check}}, items...)
		}
		meanings := make([]onFail, len(items)) // any failed condition: a write came between
		for i := range meanings {
			meanings[i] = conflict
		}
		if err := s.transact(ctx, "repair", items, meanings); err != nil {
			return err
		}
		if last {
			s.forms.reset(r.Counters)
			return nil
		}
	}
}

// talliesAsRead returns the condition that the counter item at sort key
// sk holds the tallies of before[sk] (an absent attribute reading as
// zero), or, if before has none, that there is no item: a reset's
// condition on each counter it writes or deletes, so that it fails, as
// conflicting, if another program (which moves no version) changed one
// since it was read.
func (s *Store) talliesAsRead(before map[string]driver.Counter, sk string) expression.ConditionBuilder {
	c, ok := before[sk]
	if !ok {
		return s.notExists()
	}
	cond := expression.NameNoDotSplit(s.o.pk).AttributeExists()
	for _, t := range []struct {
		name string
		v    int64
	}{{"published", c.Published}, {"read", c.Read}, {"archived", c.Archived}, {"archivedread", c.ArchivedRead}, {"hidden", c.Hidden}} {
		eq := expression.Name(t.name).Equal(expression.Value(t.v))
		if t.v == 0 {
			eq = expression.Or(expression.Name(t.name).AttributeNotExists(), eq)
		}
		cond = cond.And(eq)
	}
	return cond
}

// stamp records recounted as p's recount time, and adds 1 to its
// version, with one conditional update of c#* (failing as conflict).
func (s *Store) stamp(ctx context.Context, p driver.Partition, recounted time.Time, cond expression.ConditionBuilder, conflict onFail) error {
	it, err := s.counterUpdate(driver.Counter{Partition: p}, counterWrite{bump: true, cond: &cond, recounted: recounted})
	if err != nil {
		return err
	}
	return s.transact(ctx, "repair", []types.TransactWriteItem{it}, []onFail{conflict})
}

// adopt gives rec, if it still exists with the marks and entry given, the
// entry of as (rec with its new Entry).
func (s *Store) adopt(ctx context.Context, rec, as driver.Record) error {
	ledger := expression.Name(driver.LedgerAttribute)
	own := noEntry()
	if rec.Ledgered() {
		own = ledger.Equal(expression.Value(rec.Entry))
	}
	cond := expression.And(expression.NameNoDotSplit(s.o.pk).AttributeExists(), own)
	if !rec.Partition.IsShared() { // a broadcast has no marks, whatever attributes it carries
		cond = expression.And(cond, marksAre(rec.State(), rec.Ledgered(), rec.Receipt))
	}
	upd := expression.Set(ledger, expression.Value(as.Entry))
	if !rec.Ledgered() {
		upd = upd.Remove(expression.Name(attrSnoozed)) // only a mark snoozes
	}
	if c := driver.AdoptedCounted(rec); c != 0 {
		upd = upd.Set(expression.Name(driver.CountedAttribute), expression.Value(uint8(c)))
	}
	switch {
	case rec.Partition.IsShared():
	case rec.Receipt:
		// A receipt another program wrote joins the unread index.
		upd = upd.Set(expression.Name(attrUnread), expression.Value(rec.Message.ID+receiptMark))
	default:
		// A message another program wrote joins the unread index.
		upd = setUnread(upd, rec.Partition, rec.Message.ID, rec.State())
	}
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(upd).Build()
	if err != nil {
		return fmt.Errorf("dynamo: adopt expression: %w", err)
	}
	entry, err := s.ledgerEntry(as)
	if err != nil {
		return err
	}
	items := []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:                 aws.String(s.table),
			Key:                       s.messageKey(rec.Key()),
			UpdateExpression:          expr.Update(),
			ConditionExpression:       expr.Condition(),
			ExpressionAttributeNames:  expr.Names(),
			ExpressionAttributeValues: expr.Values(),
		}},
		{Put: &types.Put{TableName: aws.String(s.table), Item: entry}},
	}
	meanings := []onFail{func(map[string]types.AttributeValue) error { return errRecorded }, nil}
	// Adopted, a record with no entry before counts in its shared
	// partition's buckets, or in its user partition's Above if it is above
	// the watermark.
	var above []driver.Counter
	switch {
	case rec.Ledgered():
	case rec.Partition.IsShared():
		buckets, err := s.bucketUpdates(rec.Partition, rec, 1)
		if err != nil {
			return err
		}
		items = append(items, buckets...)
		meanings = append(meanings, nil, nil)
	default:
		a := as
		a.Counted = driver.AdoptedCounted(rec)
		// Another program's record counts in no thread: not in a muted
		// thread's counters either (a Recount counts it there).
		above = slices.DeleteFunc(driver.AboveCounters(a), func(c driver.Counter) bool { return c.Muted })
	}
	base, baseMeanings := items, meanings
	bounds := s.covers.take(above) // a position may cover it
	for {
		items, meanings = base, baseMeanings
		if len(above) > 0 {
			c := seenBelow(rec.Message.ID)
			counters, err := s.guardedCounterUpdates(above, nil, map[driver.Partition]counterWrite{rec.Partition: {cond: &c}}, nil, bounds, nil)
			if err != nil {
				return err
			}
			_, took := coveredWrites(above, nil, bounds)
			items = append(slices.Clone(base), counters...)
			meanings = slices.Clone(baseMeanings)
			for _, it := range counters {
				_, group, _ := s.coverItem(it)
				meanings = append(meanings, func(old map[string]types.AttributeValue) error {
					if err := coveredFailure(rec.Partition, group, old, took); err != nil {
						return err
					}
					return errTotalRefused
				})
			}
		}
		err = s.transact(ctx, "adopt", items, meanings)
		var covered *coversChanged
		switch {
		case errors.As(err, &covered):
			covered.merge(bounds, s.covers)
			continue
		case errors.Is(err, errTotalRefused):
			above = nil // at or below the watermark: in no Above
			continue
		case errors.Is(err, errRecorded):
			return nil // gone or changed: skipped
		}
		return err
	}
}

// versionCheck returns a ConditionCheck of cond on p's c#* item.
func (s *Store) versionCheck(p driver.Partition, cond expression.ConditionBuilder) (*types.ConditionCheck, error) {
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("dynamo: version check: %w", err)
	}
	return &types.ConditionCheck{
		TableName:                 aws.String(s.table),
		Key:                       s.key(p.PK(), driver.CounterSK("", "")),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}, nil
}

// counterItem returns the whole stats item of c, with version ver if set.
func (s *Store) counterItem(c driver.Counter, ver int64) (map[string]types.AttributeValue, error) {
	av, err := s.item(c.Partition.PK(), c.SK(), counterItem{
		Kind:         kindCounter,
		Published:    c.Published,
		Read:         c.Read,
		Archived:     c.Archived,
		ArchivedRead: c.ArchivedRead,
		Hidden:       c.Hidden,
		Ver:          ver,
		Above:        c.Above,
		ZP:           c.Snoozed.Published,
		ZR:           c.Snoozed.Read,
		ZA:           c.Snoozed.Archived,
		ZAR:          c.Snoozed.ArchivedRead,
		ZH:           c.Snoozed.Hidden,
		QP:           c.Pending.Published,
		QR:           c.Pending.Read,
		QA:           c.Pending.Archived,
		QAR:          c.Pending.ArchivedRead,
		QH:           c.Pending.Hidden,
		Latest:       c.Latest,
		Top:          topOf(c),
		TenantKey:    c.Partition.Tenant,
		InboxKey:     c.Partition.Inbox,
		UID:          c.Partition.User + c.Partition.Group,
	}, time.Time{})
	if err != nil {
		return nil, err
	}
	if !hasRead(c) {
		delete(av, "read")
	}
	if c.Thread != "" && c.Group == "" {
		// The copy whole, zeros too: an entry with a rev and without one
		// of them is not this version's (see decodeThreadEntry).
		av[attrRev] = &types.AttributeValueMemberN{Value: strconv.FormatInt(newRev(), 10)}
		for _, t := range threadTallies(c) {
			av[t.name] = &types.AttributeValueMemberN{Value: strconv.FormatInt(t.v, 10)}
		}
		if c.Latest != "" {
			av[attrUnread] = &types.AttributeValueMemberS{Value: activityMark + driver.ActivityKey(c.Latest, c.Thread)}
		}
	}
	return av, nil
}

// attrRev holds a thread's own counter's driver.Counter.Rev: a random
// value each write of the counter sets anew.
const attrRev = "rev"

// newRev returns a new Rev: random, so that a counter deleted and written
// again does not have an earlier Rev again either.
func newRev() int64 { return rand.Int64() }

// A thread's own counter holds its tallies twice: as every counter does,
// and under names of their own, which no other item carries (tp, tr, ta,
// tar, th: a thread's counter has no timed tallies and no Above). The
// unread index projects the second set with the counter's Latest and Rev
// (tallyAttrs), so that a query of the threads' counters reads them from
// the index's entries (see threadsQuery), while a write of c#*, in the
// index too, changes no attribute its entry holds, and so writes no
// entry.
var tallyAttrs = []string{"tp", "tr", "ta", "tar", "th", attrLatest, attrRev}

// threadTallies returns the attribute names and values of the second set
// of tallies of thread counter c (see tallyAttrs), each with the name of
// the tally it copies.
func threadTallies(c driver.Counter) []struct {
	name, of string
	v        int64
} {
	return []struct {
		name, of string
		v        int64
	}{{"tp", "published", c.Published}, {"tr", "read", c.Read}, {"ta", "archived", c.Archived}, {"tar", "archivedread", c.ArchivedRead}, {"th", "hidden", c.Hidden}}
}

// decodeThreadEntry returns thread counter c with the tallies and Latest
// of av, its unread index entry (see tallyAttrs), and whether av holds
// them: a rev and the whole copy, as every write of this version leaves
// them (an entry without, an earlier version's or another program's, is
// read by key). A copied tally that is no number (NULL included: it is
// not read as zero) is ErrInvalidInput.
func decodeThreadEntry(c driver.Counter, av map[string]types.AttributeValue) (driver.Counter, bool, error) {
	if _, ok := av[attrRev]; !ok {
		return c, false, nil // an earlier version's index: no tallies
	}
	whole := true
	var v [5]int64
	for i, t := range threadTallies(driver.Counter{}) {
		_, has := av[t.name]
		whole = whole && has
		n, err := numAttr(av, t.name)
		if err != nil {
			return c, false, fmt.Errorf("dynamo: thread counter %s/%s: %w: %v", c.Partition.PK(), c.Thread, driver.ErrInvalidInput, err)
		}
		v[i] = n
	}
	if !whole {
		return c, false, nil
	}
	latest, _ := av[attrLatest].(*types.AttributeValueMemberS)
	c.Latest = ""
	if latest != nil {
		c.Latest = latest.Value
	}
	c.Published, c.Read, c.Archived, c.ArchivedRead, c.Hidden = v[0], v[1], v[2], v[3], v[4]
	return c, true, nil
}

// decodeActivity returns the thread counter whose unread index entry is
// av (its keys and index key alone), with its Thread and Latest and no
// tallies.
func (s *Store) decodeActivity(p driver.Partition, av map[string]types.AttributeValue) (driver.Counter, error) {
	_, sk, err := s.itemKey(av)
	if err != nil {
		return driver.Counter{}, err
	}
	key, _ := av[attrUnread].(*types.AttributeValueMemberS)
	c, err := driver.ParseCounterSK(sk)
	if err == nil && key == nil {
		err = fmt.Errorf("%w: no activity key", driver.ErrInvalidInput)
	}
	var latest string
	if err == nil {
		rest, marked := strings.CutPrefix(key.Value, activityMark)
		var thread string
		var ok bool
		latest, thread, ok = strings.Cut(rest, "#")
		if !marked || !ok || thread != c.Thread {
			err = fmt.Errorf("%w: activity key %q", driver.ErrInvalidInput, key.Value)
		}
	}
	if err == nil {
		err = driver.ValidateMessageID(latest)
	}
	if err != nil {
		return driver.Counter{}, fmt.Errorf("dynamo: thread activity %s/%s: %w", p.PK(), sk, err)
	}
	c.Partition, c.Latest = p, latest
	if err := driver.ValidateCounter(c); err != nil {
		return driver.Counter{}, fmt.Errorf("dynamo: thread activity %s/%s: %w", p.PK(), sk, err)
	}
	return c, nil
}

// decodeRev returns the Rev of counter item av: 0 if it has none (an
// earlier version wrote it), ErrInvalidInput if it is not a number.
func decodeRev(av map[string]types.AttributeValue) (int64, error) {
	v, ok := av[attrRev]
	if !ok {
		return 0, nil
	}
	n, isN := v.(*types.AttributeValueMemberN)
	if !isN {
		return 0, fmt.Errorf("%w: rev of type %T", driver.ErrInvalidInput, v)
	}
	r, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: rev %q", driver.ErrInvalidInput, n.Value)
	}
	return r, nil
}

// activityMark begins the unread index's key of a thread's own counter:
// ~t<latest>#<thread>, above every message ID and receipt key, below the
// snooze entries' (~z).
const activityMark = "~t"

// threadsQuery serves a Query with Threads: the partition's threads'
// own counters by activity, from the unread index, latest first, below
// q.Before, at most q.Limit (one Query, fetching the counters from the
// table). A table without the unread index reads every thread counter of
// the partition (with Stats), and orders them.
func (s *Store) threadsQuery(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	var res driver.QueryResult
	if s.o.unread == "" {
		kc := expression.Key(s.o.pk).Equal(expression.Value(q.Partition.PK())).And(expression.Key(s.o.sk).BeginsWith(driver.ThreadStatsPrefix))
		items, err := s.queryAll(ctx, kc, nil)
		if err != nil {
			return driver.QueryResult{}, opError("query", err)
		}
		var ts []driver.Counter
		for _, av := range items {
			c, _, _, err := s.decodeCounter(q.Partition, av)
			if err == nil {
				c.Rev, err = decodeRev(av)
			}
			if err != nil {
				return driver.QueryResult{}, err
			}
			if c.Thread != "" && c.Group == "" && c.Latest != "" && (q.Before == "" || c.Latest < q.Before) {
				ts = append(ts, c)
			}
		}
		res.Tallied = true // read from the table, all of them
		slices.SortFunc(ts, func(a, b driver.Counter) int {
			return strings.Compare(driver.ActivityKey(b.Latest, b.Thread), driver.ActivityKey(a.Latest, a.Thread))
		})
		for i, c := range ts {
			if i == q.Limit {
				res.Next = ts[i-1].Latest
				break
			}
			res.Threads = append(res.Threads, c)
		}
		return res, nil
	}
	sel := types.SelectAllAttributes
	if q.ActivityOnly {
		// The index's entries alone, with the tallies if the index
		// projects them (a table this version created), no fetch.
		sel = types.SelectAllProjectedAttributes
	}
	out, err := s.markedQuery(ctx, q.Partition.PK(), activityMark, q.Before, q.Limit, sel)
	if err != nil {
		return driver.QueryResult{}, err
	}
	res.Tallied = true
	for _, av := range out.Items {
		act, err := s.decodeActivity(q.Partition, av)
		if err != nil {
			return driver.QueryResult{}, err
		}
		if act.Thread == "" || act.Group != "" || act.Latest == "" {
			continue // not a thread's own counter
		}
		c, tallied := act, true
		if sel == types.SelectAllAttributes {
			c, _, _, err = s.decodeCounter(q.Partition, av) // fetched from the table
		} else {
			c, tallied, err = decodeThreadEntry(act, av)
		}
		if err == nil && c.Latest != act.Latest {
			err = fmt.Errorf("dynamo: thread counter %s/%s: %w: latest %q under activity %q", q.Partition.PK(), act.Thread, driver.ErrInvalidInput, c.Latest, act.Latest)
		}
		if err != nil {
			return driver.QueryResult{}, err
		}
		res.Tallied = res.Tallied && tallied
		if c.Rev, err = decodeRev(av); err != nil {
			return driver.QueryResult{}, fmt.Errorf("dynamo: thread counter %s/%s: %w", q.Partition.PK(), c.Thread, err)
		}
		res.Threads = append(res.Threads, c)
	}
	if !res.Tallied {
		// A table whose index holds no tallies (an earlier version's):
		// none has them, nor a Rev.
		for i, c := range res.Threads {
			res.Threads[i] = driver.Counter{Partition: c.Partition, Thread: c.Thread, Latest: c.Latest}
		}
	}
	if out.LastEvaluatedKey != nil && len(res.Threads) > 0 {
		res.Next = res.Threads[len(res.Threads)-1].Latest
	}
	return res, nil
}

// counters reads the counters of p with the keys of q.Keys (and p's
// total, for its version) by key, strongly consistent: Stats with Keys.
// The total of a user's partition, if q.Keys names it, comes with her
// covered threads' counters of her direct messages, which it keeps (see
// coveredAttr), and her counter of a group, if q.Keys names it, with
// those of the group's threads, which it keeps; a shared partition's
// total tells whether it is Bucketed.
// It reads them with one BatchGetItem, or, with q.Isolated, one
// TransactGetItems (the total first), which DynamoDB reads as of one
// instant: a write that lands during it shows in all of them or none.
func (s *Store) counters(ctx context.Context, q driver.StatsQuery) (driver.Stats, error) {
	p := q.Partition
	total := driver.CounterSK("", "")
	req := []map[string]types.AttributeValue{s.key(p.PK(), total)}
	want := map[string]bool{}
	wantTotal := false
	for _, k := range q.Keys {
		k = driver.Counter{Partition: p, Category: k.Category, Group: k.Group, Thread: k.Thread}
		switch sk := k.SK(); {
		case sk == total:
			wantTotal = true
		case !want[sk]:
			want[sk] = true
			req = append(req, s.key(p.PK(), sk))
		}
	}
	var items []map[string]types.AttributeValue
	var err error
	if q.Isolated {
		items, err = s.transactGet(ctx, req)
	} else if items, err = s.batchGet(ctx, req, true); err != nil {
		err = opError("stats", err)
	}
	if err != nil {
		return driver.Stats{}, err
	}
	var st driver.Stats
	var above map[driver.Counter]int64
	for _, av := range items {
		_, sk, err := s.itemKey(av)
		if err != nil {
			return driver.Stats{}, err
		}
		c, ver, _, err := s.decodeCounter(p, av)
		if err != nil {
			return driver.Stats{}, err
		}
		if sk == total {
			st.Version = ver
			if p.IsShared() {
				_, st.Bucketed = av[attrBucketed]
			}
			if !p.IsShared() {
				if st.Preferences, err = s.decodePrefs(p, av); err != nil {
					return driver.Stats{}, err
				}
				if above, err = categoryAbove(p, av); err != nil {
					return driver.Stats{}, err
				}
			}
			if !p.IsShared() {
				// The covered threads' counters of her direct messages,
				// which the total keeps (see coveredAttr).
				covered, err := coveredOf(p, "", av)
				if err != nil {
					return driver.Stats{}, err
				}
				s.covers.learnStats(p, covered, groupThreads(""))
				if wantTotal {
					st.Counters = append(append(st.Counters, c), covered...)
				}
				continue
			}
			if !wantTotal {
				continue
			}
		}
		st.Counters = append(st.Counters, c)
		if keepsPositions(c) {
			// Her counter of a group comes with her positions in its
			// threads, which it keeps.
			covered, err := coveredOf(p, c.Group, av)
			if err != nil {
				return driver.Stats{}, err
			}
			st.Counters = append(st.Counters, covered...)
			s.covers.learnStats(p, covered, groupThreads(c.Group))
		}
	}
	st.Counters = withCategoryAbove(st.Counters, above, func(c driver.Counter) bool { return want[c.SK()] })
	return st, nil
}

// transactGet reads the items at keys (at most maxTransactItems, no
// duplicates) with one TransactGetItems, as of one instant, and returns
// those that exist. The client's retryer also retries a read cancelled
// by throttling or a TransactionConflict (a transaction writing one of
// the items at that moment), as for transactions that write.
func (s *Store) transactGet(ctx context.Context, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	in := &dynamodb.TransactGetItemsInput{ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}
	for _, k := range keys {
		in.TransactItems = append(in.TransactItems, types.TransactGetItem{Get: &types.Get{TableName: aws.String(s.table), Key: k}})
	}
	res, err := s.client.TransactGetItems(ctx, in, retryCancellations)
	if err != nil {
		return nil, txError("stats", err, nil)
	}
	var out []map[string]types.AttributeValue
	for _, r := range res.Responses {
		if len(r.Item) > 0 {
			out = append(out, r.Item)
		}
	}
	return out, nil
}

// mapTally reads entry k, n of a thread's map of tallies by category (a
// muted thread's, a covered one's; see mutedKeys): the category, and the
// tally; what says what is wrong with an entry that is none ("" if it is
// one).
func mapTally(k string, n types.AttributeValue) (cat []byte, v int64, what string) {
	if len(k) == 0 || k[0] != 'u' && k[0] != 'a' {
		return nil, 0, "a key of no tally"
	}
	cat, err := base64.RawURLEncoding.Strict().DecodeString(k[1:])
	num, isNum := n.(*types.AttributeValueMemberN)
	if err != nil || !isNum {
		return nil, 0, "a tally that is not a number of a category"
	}
	if v, err = strconv.ParseInt(num.Value, 10, 64); err != nil {
		return nil, 0, "a tally that is not an integer"
	}
	return cat, v, ""
}

// threadMap reads attribute name, v of a user's c#* (partition p) as a
// thread's map of prefix (a muted thread's, mutedPrefix; a covered one's,
// coveredPrefix), kind naming it in errors: ok is false for an attribute
// of another name; m is nil for one of the prefix that is no thread's map
// (a thread not base64url, the name not the thread's, not a map). bad
// makes the ErrInvalidInput of what is wrong with it.
func threadMap(p driver.Partition, name string, v types.AttributeValue, prefix, kind string) (thread []byte, m *types.AttributeValueMemberM, bad func(string) error, ok bool) {
	enc, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return nil, nil, nil, false
	}
	bad = func(what string) error {
		return fmt.Errorf("dynamo: %s thread %q of %s: %w: %s", kind, name, p.PK(), driver.ErrInvalidInput, what)
	}
	t, err := base64.RawURLEncoding.Strict().DecodeString(enc)
	m, isMap := v.(*types.AttributeValueMemberM)
	if err != nil || !isMap || prefix+base64.RawURLEncoding.EncodeToString(t) != name {
		return t, nil, bad, true
	}
	return t, m, bad, true
}

// coveredReset returns the attribute, and its map, that keep the counters
// cs of covered thread t, with their position, as a reset writes them
// (see coveredAttr); the map is nil if cs hold no position.
func coveredReset(t string, cs []driver.Counter) (string, *types.AttributeValueMemberM) {
	var pos driver.Position
	tallies := map[string]int64{}
	for _, c := range cs {
		if c.Category == "" {
			pos = c.Position
		}
		u, a := mutedKeys(c)
		tallies[u], tallies[a] = c.Unread, c.Above
	}
	if pos.IsZero() {
		return "", nil
	}
	return coveredAttr(t), coveredMap(pos, tallies)
}
