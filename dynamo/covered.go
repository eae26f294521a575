package dynamo

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox/driver"
)

// The counters of what a user's read positions cover (driver.Counter.Covered)
// are kept on the partition's c#* item, as a muted thread's are (see
// mutedAttr): one map attribute per thread with a position,
// cv#<thread> (base64url), holding each category's Unread and Above under
// u<category> and a<category> (the category base64url-encoded, "" for
// all), and the position itself, b (its Bound), t (its At, epoch seconds),
// e (its Earlier steps, missing when none) and w (its Done, epoch seconds,
// missing until it is written out). Every change of them
// changes the total too, so it costs no item more, and Counts reads them
// with the total.
//
// A cover mark (driver.Mark.Cover) writes the map (whole for a first
// position, its fields for a move) on condition that the position is its
// From and the version its Version, or removes it when the position is
// dropped, on condition too that it counts nothing. A write that counts a
// record of the thread adds to the map only on condition that the
// position covers the record (cv#<thread>.b above its ID), else drops
// the change on condition that it does not: it guesses which from what
// the Store last saw of the partition's positions (coverHints), and a
// failed condition is made again in the other form (coversChanged).
//
// A user's read positions in threads of a group's messages
// (driver.Counter.Covered with Group set) are kept likewise on her
// counter of the group, c#*#<group> (driver.CounterSK("", group)), which
// every write of her receipts of the group's messages updates: the same
// cv#<thread> maps, their conditions there (that of a receipt mark
// refused over a position, driver.Mark.UnreadOverCover, too). So her c#*,
// which every write of hers carries, keeps only the positions of her
// direct threads, which are few and dropped once written out, and does
// not grow with the group chats she reads, whose positions stay; and
// c#*#<group> is read with the counter it is anyway. A cover mark of a
// group's thread moves the map on c#*#<group> on condition that the
// position is From, is versioned on c#* (its condition and its move, as
// a direct one's), and puts her position item in the group's partition
// (driver.ReaderPositionSK), not a position item of her own: three items,
// as driver.MarkItems counts them. Stats by key returns them with her
// counter of the group.

// coveredPrefix begins the names of the attributes of c#* (c#*#<group>)
// that keep a covered thread's counters and position.
const coveredPrefix = "cv#"

// The keys of a covered thread's map that hold its position.
const (
	posBound   = "b"
	posAt      = "t"
	posEarlier = "e"
	posDone    = "w"
)

// coveredAttr returns the name of the attribute that keeps the counters
// and position of covered thread t: on c#* for a thread of direct
// messages, on c#*#<group> for one of the group's.
func coveredAttr(t string) string {
	return coveredPrefix + base64.RawURLEncoding.EncodeToString([]byte(t))
}

// parseCoveredAttr returns the thread whose map attribute is name (see
// coveredAttr); ok is false for another attribute, valid is false for
// one of the prefix that is in coveredAttr's form of no thread.
func parseCoveredAttr(name string) (t string, ok, valid bool) {
	enc, ok := strings.CutPrefix(name, coveredPrefix)
	if !ok {
		return "", false, false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(enc)
	t = string(b)
	valid = err == nil && t != "" && driver.ValidateThread(t) == nil && coveredAttr(t) == name
	return t, true, valid
}

// coveredPath returns the document path of key k of thread t's map.
func coveredPath(t, k string) string { return coveredAttr(t) + "." + k }

// coveredMap returns the map attribute of a covered thread whose position
// is pos and whose tallies are tallies (by key, see mutedKeys).
func coveredMap(pos driver.Position, tallies map[string]int64) *types.AttributeValueMemberM {
	m := &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
		posBound: &types.AttributeValueMemberS{Value: pos.Bound},
		posAt:    &types.AttributeValueMemberN{Value: strconv.FormatInt(pos.At.Unix(), 10)},
	}}
	if pos.Earlier != "" {
		m.Value[posEarlier] = &types.AttributeValueMemberS{Value: pos.Earlier}
	}
	if !pos.Done.IsZero() {
		m.Value[posDone] = &types.AttributeValueMemberN{Value: strconv.FormatInt(pos.Done.Unix(), 10)}
	}
	for k, n := range tallies {
		m.Value[k] = &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
	}
	return m
}

// coveredOf returns the covered threads' counters a user's c#* item av
// keeps (with group set, her c#*#<group>: those of the group's threads),
// sorted by key: each thread's counter of all categories, with its
// position, and those of its categories not at zero. A map of the prefix
// that is not one, or holds what is neither a counter nor a position, or
// no position, is ErrInvalidInput.
func coveredOf(p driver.Partition, group string, av map[string]types.AttributeValue) ([]driver.Counter, error) {
	var out []driver.Counter
	for name, v := range av {
		t, ok, valid := parseCoveredAttr(name)
		if !ok {
			continue
		}
		bad := func(what string) error {
			return fmt.Errorf("dynamo: covered thread %q of %s: %w: %s", name, p.PK(), driver.ErrInvalidInput, what)
		}
		m, isMap := v.(*types.AttributeValueMemberM)
		if !valid || !isMap || p.IsShared() {
			return nil, bad("not a thread's map")
		}
		all := &driver.Counter{Partition: p, Group: group, Thread: t, Covered: true}
		byCat := map[string]*driver.Counter{"": all}
		var pos driver.Position
		for k, n := range m.Value {
			switch k {
			case posBound, posEarlier:
				s, isS := n.(*types.AttributeValueMemberS)
				if !isS {
					return nil, bad("a position's " + k + " that is not a string")
				}
				if k == posBound {
					pos.Bound = s.Value
				} else {
					pos.Earlier = s.Value
				}
				continue
			case posAt, posDone:
				at, err := numAttr(m.Value, k)
				if err != nil {
					return nil, bad("a position's time that is not a number")
				}
				if k == posAt {
					pos.At = time.Unix(at, 0).UTC()
				} else {
					pos.Done = time.Unix(at, 0).UTC()
				}
				continue
			}
			cat, v, what := mapTally(k, n)
			if what != "" {
				return nil, bad(what)
			}
			c := byCat[string(cat)]
			if c == nil {
				c = &driver.Counter{Partition: p, Category: string(cat), Group: group, Thread: t, Covered: true}
				byCat[string(cat)] = c
			}
			if k[0] == 'u' {
				c.Unread = v
			} else {
				c.Above = v
			}
		}
		if pos.Bound == "" || pos.At.IsZero() {
			return nil, bad("no position")
		}
		all.Position = pos
		for cat, c := range byCat {
			if err := driver.ValidateCounter(*c); err != nil {
				return nil, bad(err.Error())
			}
			if cat == "" || !c.IsZero() {
				out = append(out, *c)
			}
		}
	}
	slices.SortFunc(out, func(a, b driver.Counter) int { return strings.Compare(a.SK(), b.SK()) })
	return out, nil
}

// boundsOf returns, of threads, those of group ("" for direct ones) with
// the bounds of their positions in old, a user's c#* (with group set,
// c#*#<group>) as a failed condition returned it ("" for none).
func boundsOf(old map[string]types.AttributeValue, group string, threads map[driver.GroupThread]coverTake) map[driver.GroupThread]string {
	out := make(map[driver.GroupThread]string, len(threads))
	for t := range threads {
		if t.Group == group {
			out[t] = boundIn(old, t.Thread)
		}
	}
	return out
}

// boundIn returns the bound of thread t's position in av, a user's c#*
// or c#*#<group> ("" for none, or one that is not a string).
func boundIn(av map[string]types.AttributeValue, t string) string {
	m, _ := av[coveredAttr(t)].(*types.AttributeValueMemberM)
	if m == nil {
		return ""
	}
	b, _ := m.Value[posBound].(*types.AttributeValueMemberS)
	if b == nil {
		return ""
	}
	return b.Value
}

// coverWrite is what a write does to one covered thread's map on its
// partition's c#* (c#*#<group> for a thread of a group's messages).
type coverWrite struct {
	// add adds to the map's tallies (by key, see mutedKeys).
	add map[string]int64
	// move, if set, moves the thread's position (a cover mark).
	move *driver.CoverChange
	// in is the greatest ID of the records whose changes the write takes
	// as covered, out the least of those it takes as not ("" for none):
	// the condition that the position's bound is above in and not above
	// out.
	in, out string
}

// update adds to upd and cond what w does to thread t's map.
func (w *coverWrite) update(t string, upd expression.UpdateBuilder, cond *expression.ConditionBuilder) expression.UpdateBuilder {
	and := func(c expression.ConditionBuilder) {
		if cond.IsSet() {
			c = expression.And(*cond, c)
		}
		*cond = c
	}
	attr := coveredAttr(t)
	bound := expression.Name(coveredPath(t, posBound))
	if w.in != "" {
		and(bound.GreaterThan(expression.Value(w.in)))
	}
	if w.out != "" {
		and(expression.Not(bound.GreaterThan(expression.Value(w.out))))
	}
	addTallies := func() {
		for _, k := range slices.Sorted(maps.Keys(w.add)) {
			if n := w.add[k]; n != 0 {
				path := expression.Name(coveredPath(t, k))
				upd = upd.Set(path, expression.Plus(path.IfNotExists(expression.Value(0)), expression.Value(n)))
			}
		}
	}
	m := w.move
	if m == nil {
		addTallies()
		return upd
	}
	// The position is From.
	if m.From.IsZero() {
		and(expression.NameNoDotSplit(attr).AttributeNotExists())
	} else {
		at := expression.Name(coveredPath(t, posAt))
		earlier := expression.Name(coveredPath(t, posEarlier))
		c := expression.And(bound.Equal(expression.Value(m.From.Bound)), at.Equal(expression.Value(m.From.At.Unix())))
		if m.From.Earlier == "" {
			c = expression.And(c, earlier.AttributeNotExists())
		} else {
			c = expression.And(c, earlier.Equal(expression.Value(m.From.Earlier)))
		}
		done := expression.Name(coveredPath(t, posDone))
		if m.From.Done.IsZero() {
			c = expression.And(c, done.AttributeNotExists())
		} else {
			c = expression.And(c, done.Equal(expression.Value(m.From.Done.Unix())))
		}
		and(c)
	}
	switch {
	case m.To.IsZero():
		// Dropped: on condition that it counts nothing once the drop's
		// own changes (w.add) are made (the tallies of all categories
		// sum each category's).
		u, a := mutedKeys(driver.Counter{})
		for _, k := range []string{u, a} {
			path := expression.Name(coveredPath(t, k))
			if n := -w.add[k]; n != 0 {
				and(path.Equal(expression.Value(n)))
			} else {
				and(expression.Or(path.AttributeNotExists(), path.Equal(expression.Value(0))))
			}
		}
		return upd.Remove(expression.NameNoDotSplit(attr))
	case m.From.IsZero():
		return upd.Set(expression.NameNoDotSplit(attr), expression.Value(coveredMap(m.To, w.add)))
	}
	upd = upd.Set(bound, expression.Value(m.To.Bound)).Set(expression.Name(coveredPath(t, posAt)), expression.Value(m.To.At.Unix()))
	if m.To.Earlier == "" {
		upd = upd.Remove(expression.Name(coveredPath(t, posEarlier)))
	} else {
		upd = upd.Set(expression.Name(coveredPath(t, posEarlier)), expression.Value(m.To.Earlier))
	}
	if m.To.Done.IsZero() {
		upd = upd.Remove(expression.Name(coveredPath(t, posDone)))
	} else {
		upd = upd.Set(expression.Name(coveredPath(t, posDone)), expression.Value(m.To.Done.Unix()))
	}
	addTallies()
	return upd
}

// coverTake is what a write took of a covered thread's position, for the
// changes of its records (driver.Counter.Of): the bound it took, and the
// records' IDs.
type coverTake struct {
	bound string
	ofs   []string
}

// coveredWrites returns, by partition and thread (of a group's messages,
// or direct), what deltas' changes of covered counters
// (driver.Counter.Covered) do to their partitions' c#* (c#*#<group>),
// with moves the cover marks of the write (by partition and thread) and
// bounds the bounds it takes the positions to have (by partition and
// thread, "" for none) for the changes of records (Counter.Of): those
// taken as covered are added, on condition that they are, the others
// dropped, on condition that they are not. A thread that a cover mark
// moves takes the mark's From (its condition); with To zero its changes
// are dropped with its map. It also returns what the write took
// (coverTake), for the failure of its condition (coveredFailure).
func coveredWrites(deltas []driver.Counter, moves map[driver.Partition]map[driver.GroupThread]driver.CoverChange, bounds map[driver.Partition]map[driver.GroupThread]string) (map[driver.Partition]map[driver.GroupThread]*coverWrite, map[driver.Partition]map[driver.GroupThread]coverTake) {
	out := map[driver.Partition]map[driver.GroupThread]*coverWrite{}
	took := map[driver.Partition]map[driver.GroupThread]coverTake{}
	of := func(p driver.Partition, t driver.GroupThread) *coverWrite {
		if out[p] == nil {
			out[p] = map[driver.GroupThread]*coverWrite{}
		}
		w := out[p][t]
		if w == nil {
			w = &coverWrite{add: map[string]int64{}}
			out[p][t] = w
		}
		return w
	}
	for p, ms := range moves {
		for t, m := range ms {
			of(p, t).move = &m
		}
	}
	for _, d := range deltas {
		if !d.Covered {
			continue
		}
		p, t := d.Partition, driver.GroupThread{Group: d.Group, Thread: d.Thread}
		w := of(p, t)
		covered := true
		switch {
		case w.move != nil && w.move.To.IsZero() && d.Of == "":
			// The drop's own changes (what it takes out of the counters:
			// expired messages whose removals are pending): the
			// condition that the counters reach zero with them.
		case w.move != nil:
			covered = !w.move.To.IsZero() && (d.Of == "" || w.move.From.Covers(d.Of))
		case d.Of != "":
			bound := bounds[p][t]
			covered = bound != "" && d.Of < bound
			if took[p] == nil {
				took[p] = map[driver.GroupThread]coverTake{}
			}
			tk := took[p][t]
			tk.bound = bound
			tk.ofs = append(tk.ofs, d.Of)
			took[p][t] = tk
			if covered {
				w.in = max(w.in, d.Of)
			} else if w.out == "" || d.Of < w.out {
				w.out = d.Of
			}
		}
		if covered {
			u, a := mutedKeys(d)
			w.add[u] += d.Unread
			w.add[a] += d.Above
		}
	}
	return out, took
}

// coversChanged reports that the condition of partition p's total (its
// counter of group, for the positions in the group's threads) failed
// because p's read positions do not cover the records the write took as
// covered, or cover some it took as not: bounds holds them as they are
// (by thread, those the item keeps, "" for none). A write made again
// with them applies the covered counters' changes, or drops them, as it
// should.
type coversChanged struct {
	p      driver.Partition
	group  string
	bounds map[driver.GroupThread]string
}

// Error names the partition.
func (e *coversChanged) Error() string {
	return "dynamo: the read positions of " + e.p.PK() + " are not those the write took"
}

// coveredFailure returns, for a failed condition of p's c#* (with group
// set, of its c#*#<group>) whose item was old, a *coversChanged if the
// write took some record of the item's threads as covered, or not,
// wrongly (took: see coveredWrites); else nil.
func coveredFailure(p driver.Partition, group string, old map[string]types.AttributeValue, took map[driver.Partition]map[driver.GroupThread]coverTake) error {
	of := took[p]
	if len(of) == 0 {
		return nil
	}
	are := boundsOf(old, group, of)
	for t, tk := range of {
		if t.Group != group {
			continue
		}
		for _, id := range tk.ofs {
			if (tk.bound != "" && id < tk.bound) != (are[t] != "" && id < are[t]) {
				return &coversChanged{p: p, group: group, bounds: are}
			}
		}
	}
	return nil
}

// merge sets, in bounds, p's positions' bounds as e found them (those of
// the threads of e's item), and has hints learn them.
func (e *coversChanged) merge(bounds map[driver.Partition]map[driver.GroupThread]string, hints *coverHints) {
	if bounds[e.p] == nil {
		bounds[e.p] = map[driver.GroupThread]string{}
	}
	maps.Copy(bounds[e.p], e.bounds)
	hints.learn(e.p, e.bounds, nil)
}

// coverHints remembers, for up to muteHintsSize user partitions, the
// bounds of the read positions the Store last saw there (its cover marks,
// its Stats, a failed condition: see coversChanged), so that a write of a
// record of a covered thread takes it as covered, or not, rightly from its
// first attempt: a hint only, which the write's condition checks, so a
// stale one costs an attempt more, never a wrong count. It is safe for
// concurrent use.
type coverHints struct {
	mu sync.Mutex
	m  map[driver.Partition]map[driver.GroupThread]string
}

// take returns, for the covered counters of deltas, the bounds of their
// threads' positions as h remembers them, for a write's first attempt.
func (h *coverHints) take(deltas []driver.Counter) map[driver.Partition]map[driver.GroupThread]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[driver.Partition]map[driver.GroupThread]string{}
	for _, d := range deltas {
		t := driver.GroupThread{Group: d.Group, Thread: d.Thread}
		if b := h.m[d.Partition][t]; d.Covered && b != "" {
			if out[d.Partition] == nil {
				out[d.Partition] = map[driver.GroupThread]string{}
			}
			out[d.Partition][t] = b
		}
	}
	return out
}

// learn records bounds, p's positions' bounds as they are, by thread (""
// for none); those of the threads of which all reports true (nil: none)
// are all of p's there: h forgets the others.
func (h *coverHints) learn(p driver.Partition, bounds map[driver.GroupThread]string, all func(driver.GroupThread) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(bounds) == 0 && (all == nil || h.m[p] == nil) {
		return
	}
	if h.m == nil || len(h.m) >= muteHintsSize {
		h.m = map[driver.Partition]map[driver.GroupThread]string{}
	}
	if h.m[p] == nil {
		h.m[p] = map[driver.GroupThread]string{}
	}
	if all != nil {
		maps.DeleteFunc(h.m[p], func(t driver.GroupThread, _ string) bool { return all(t) })
	}
	for t, b := range bounds {
		if b != "" {
			h.m[p][t] = b
		} else {
			delete(h.m[p], t)
		}
	}
	if len(h.m[p]) == 0 {
		delete(h.m, p)
	}
}

// learnStats records the positions of p's counters cs, as a Stats that
// read them returns them: all of p's in the threads of which all reports
// true (those of the items it read).
func (h *coverHints) learnStats(p driver.Partition, cs []driver.Counter, all func(driver.GroupThread) bool) {
	if p.IsShared() {
		return
	}
	bounds := map[driver.GroupThread]string{}
	for _, c := range cs {
		if c.Covered && c.Category == "" && !c.Position.IsZero() {
			bounds[driver.GroupThread{Group: c.Group, Thread: c.Thread}] = c.Position.Bound
		}
	}
	h.learn(p, bounds, all)
}

// anyThread reports true for every thread: a read of all of a partition's
// positions.
func anyThread(driver.GroupThread) bool { return true }

// groupThreads returns the function that reports whether a thread is one
// of group's ("" for direct ones): a read of the positions one item
// keeps.
func groupThreads(group string) func(driver.GroupThread) bool {
	return func(t driver.GroupThread) bool { return t.Group == group }
}

// movesOf returns the cover marks of totals (counterWrite.moves), by
// partition and thread.
func movesOf(totals map[driver.Partition]counterWrite) map[driver.Partition]map[driver.GroupThread]driver.CoverChange {
	out := map[driver.Partition]map[driver.GroupThread]driver.CoverChange{}
	for p, w := range totals {
		if len(w.moves) > 0 {
			out[p] = w.moves
		}
	}
	return out
}

// kindPosition is the kind of a user's read position item
// (driver.PositionSK), which each move of the position writes with c#*,
// for the table's stream: the position itself lives on c#*.
const kindPosition = "RP"

// positionItem is a user's read position item: the position of thread
// Thread as on c#* (At in epoch seconds, Earlier its earlier steps).
type positionItem struct {
	Kind      string `dynamodbav:"kind"`
	Thread    string `dynamodbav:"thread"`
	Bound     string `dynamodbav:"bound"`
	At        int64  `dynamodbav:"at"`
	Earlier   string `dynamodbav:"earlier,omitempty"`
	Done      int64  `dynamodbav:"done,omitempty"`
	TenantKey string `dynamodbav:"tenant_key"`
	InboxKey  string `dynamodbav:"inbox_key"`
	UID       string `dynamodbav:"uid"`
}

// positionWrite returns the transaction item of cover mark c of user
// partition p for the stream: a Put of the position item with c.To, or
// its Delete when c.To is zero, unconditional (the mark's condition is
// on c#*). Of a group's thread, it is her position item in the group's
// partition (see readerPositionWrite).
func (s *Store) positionWrite(p driver.Partition, c driver.CoverChange) (types.TransactWriteItem, error) {
	if c.Group != "" {
		return s.readerPositionWrite(driver.Reader{Partition: driver.Partition{Tenant: p.Tenant, Inbox: p.Inbox, Group: c.Group}, Thread: c.Thread, User: p.User, Position: c.To})
	}
	sk := driver.PositionSK(c.Thread)
	if c.To.IsZero() {
		return types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.table), Key: s.key(p.PK(), sk)}}, nil
	}
	item, err := s.item(p.PK(), sk, positionItem{Kind: kindPosition, Thread: c.Thread, Bound: c.To.Bound, At: c.To.At.Unix(), Earlier: c.To.Earlier, Done: doneUnix(c.To), TenantKey: p.Tenant, InboxKey: p.Inbox, UID: p.User}, time.Time{})
	if err != nil {
		return types.TransactWriteItem{}, err
	}
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.table), Item: item}}, nil
}

// leavesCoverable reports whether mk, a mark of a direct message that
// changes its marks, leaves it as a read position could cover it
// (driver.Coverable, with To's marks and timed entry): Store.Mark refuses
// it if its thread's position covers it (driver.CoveredError).
func leavesCoverable(mk driver.Mark) bool {
	if mk.Key.ID == "" || mk.Receipt || mk.Delete || mk.From == mk.To {
		return false
	}
	rec := mk.EntryRecord()
	rec.Counted = mk.To.Counted()
	puts, _ := mk.TimedWrites()
	for _, e := range puts {
		rec.Timed = driver.TimedKeyOf(e)
	}
	return driver.Coverable(rec)
}

// doneUnix returns pos.Done in epoch seconds, 0 for none.
func doneUnix(pos driver.Position) int64 {
	if pos.Done.IsZero() {
		return 0
	}
	return pos.Done.Unix()
}

// compareThreads orders threads by group, then thread, for the names of
// an update's expression to come in one order.
func compareThreads(a, b driver.GroupThread) int {
	if c := strings.Compare(a.Group, b.Group); c != 0 {
		return c
	}
	return strings.Compare(a.Thread, b.Thread)
}

// coverItem reports whether it is the update of a user partition's total
// (c#*) or of her counter of a group (c#*#<group>), which keep her read
// positions: ok, with the partition and the group ("" for the total).
func (s *Store) coverItem(it types.TransactWriteItem) (p driver.Partition, group string, ok bool) {
	if it.Update == nil {
		return driver.Partition{}, "", false
	}
	pk, _ := it.Update.Key[s.o.pk].(*types.AttributeValueMemberS)
	sk, _ := it.Update.Key[s.o.sk].(*types.AttributeValueMemberS)
	if pk == nil || sk == nil {
		return driver.Partition{}, "", false
	}
	p, err := driver.ParsePartitionKey(pk.Value)
	if err != nil || p.IsShared() {
		return driver.Partition{}, "", false
	}
	c, err := driver.ParseCounterSK(sk.Value)
	if err != nil || c.Category != "" || c.Thread != "" || c.Covered || c.Muted || c.Group == driver.PublicGroup {
		return driver.Partition{}, "", false
	}
	return p, c.Group, true
}

// groupCover returns, for it, the update of a user's counter of a group
// (c#*#<group>) with a condition, the meaning of its failure for a write
// that took her positions so (see coveredWrites): the positions in the
// group's threads are not those the write took (coversChanged), else
// err; nil for any other item.
func (s *Store) groupCover(it types.TransactWriteItem, took map[driver.Partition]map[driver.GroupThread]coverTake, err error) onFail {
	p, group, ok := s.coverItem(it)
	if !ok || group == "" || it.Update.ConditionExpression == nil {
		return nil
	}
	return func(old map[string]types.AttributeValue) error {
		if e := coveredFailure(p, group, old, took); e != nil {
			return e
		}
		return fmt.Errorf("%w: read positions of %s in threads of group %q moved", err, p.PK(), group)
	}
}
