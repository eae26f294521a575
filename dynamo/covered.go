package dynamo

import (
	"encoding/base64"
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

// coveredPrefix begins the names of the attributes of c#* that keep a
// covered thread's counters and position.
const coveredPrefix = "cv#"

// The keys of a covered thread's map that hold its position.
const (
	posBound   = "b"
	posAt      = "t"
	posEarlier = "e"
	posDone    = "w"
)

// coveredAttr returns the name of the attribute of c#* that keeps the
// counters and position of covered thread t.
func coveredAttr(t string) string {
	return coveredPrefix + base64.RawURLEncoding.EncodeToString([]byte(t))
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
// keeps, sorted by key: each thread's counter of all categories, with its
// position, and those of its categories not at zero. A map of the prefix
// that is not one, or holds what is neither a counter nor a position, or
// no position, is ErrInvalidInput.
func coveredOf(p driver.Partition, av map[string]types.AttributeValue) ([]driver.Counter, error) {
	var out []driver.Counter
	for name, v := range av {
		t, m, bad, ok := threadMap(p, name, v, coveredPrefix, "covered")
		if !ok {
			continue
		}
		if m == nil || p.IsShared() {
			return nil, bad("not a thread's map")
		}
		all := &driver.Counter{Partition: p, Thread: string(t), Covered: true}
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
				c = &driver.Counter{Partition: p, Category: string(cat), Thread: string(t), Covered: true}
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

// boundsOf returns, of threads, the bounds of the positions of old, a
// user's c#* as a failed condition returned it ("" for none).
func boundsOf(old map[string]types.AttributeValue, threads map[string]coverTake) map[string]string {
	out := make(map[string]string, len(threads))
	for t := range threads {
		out[t] = boundIn(old, t)
	}
	return out
}

// boundIn returns the bound of thread t's position in av, a user's c#*
// ("" for none, or one that is not a string).
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
// partition's c#*.
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

// coveredWrites returns, by partition and thread, what deltas' changes of
// covered counters (driver.Counter.Covered) do to their partitions' c#*,
// with moves the cover marks of the write (by partition and thread) and
// bounds the bounds it takes the positions to have (by partition and
// thread, "" for none) for the changes of records (Counter.Of): those
// taken as covered are added, on condition that they are, the others
// dropped, on condition that they are not. A thread that a cover mark
// moves takes the mark's From (its condition); with To zero its changes
// are dropped with its map. It also returns what the write took
// (coverTake), for the failure of its condition (coveredFailure).
func coveredWrites(deltas []driver.Counter, moves map[driver.Partition]map[string]driver.CoverChange, bounds map[driver.Partition]map[string]string) (map[driver.Partition]map[string]*coverWrite, map[driver.Partition]map[string]coverTake) {
	out := map[driver.Partition]map[string]*coverWrite{}
	took := map[driver.Partition]map[string]coverTake{}
	of := func(p driver.Partition, t string) *coverWrite {
		if out[p] == nil {
			out[p] = map[string]*coverWrite{}
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
		p, t := d.Partition, d.Thread
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
				took[p] = map[string]coverTake{}
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

// coversChanged reports that the condition of partition p's total failed
// because p's read positions do not cover the records the write took as
// covered, or cover some it took as not: bounds holds them as they are
// (by thread, "" for none). A write made again with them applies the
// covered counters' changes, or drops them, as it should.
type coversChanged struct {
	p      driver.Partition
	bounds map[string]string
}

// Error names the partition.
func (e *coversChanged) Error() string {
	return "dynamo: the read positions of " + e.p.PK() + " are not those the write took"
}

// coveredFailure returns, for a failed condition of p's c#* whose item
// was old, a *coversChanged if the write took some record as covered, or
// not, wrongly (took: see coveredWrites); else nil.
func coveredFailure(p driver.Partition, old map[string]types.AttributeValue, took map[driver.Partition]map[string]coverTake) error {
	of := took[p]
	if len(of) == 0 {
		return nil
	}
	are := boundsOf(old, of)
	for t, tk := range of {
		for _, id := range tk.ofs {
			if (tk.bound != "" && id < tk.bound) != (are[t] != "" && id < are[t]) {
				return &coversChanged{p: p, bounds: are}
			}
		}
	}
	return nil
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
	m  map[driver.Partition]map[string]string
}

// take returns, for the covered counters of deltas, the bounds of their
// threads' positions as h remembers them, for a write's first attempt.
func (h *coverHints) take(deltas []driver.Counter) map[driver.Partition]map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[driver.Partition]map[string]string{}
	for _, d := range deltas {
		if b := h.m[d.Partition][d.Thread]; d.Covered && b != "" {
			if out[d.Partition] == nil {
				out[d.Partition] = map[string]string{}
			}
			out[d.Partition][d.Thread] = b
		}
	}
	return out
}

// learn records bounds, p's positions' bounds as they are, by thread (""
// for none); with all, they are all of p's.
func (h *coverHints) learn(p driver.Partition, bounds map[string]string, all bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(bounds) == 0 && (!all || h.m[p] == nil) {
		return
	}
	if h.m == nil || len(h.m) >= muteHintsSize {
		h.m = map[driver.Partition]map[string]string{}
	}
	if h.m[p] == nil || all {
		h.m[p] = map[string]string{}
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
// read p's total returns them: all of p's.
func (h *coverHints) learnStats(p driver.Partition, cs []driver.Counter) {
	if p.IsShared() {
		return
	}
	bounds := map[string]string{}
	for t, pos := range driver.Positions(cs) {
		bounds[t] = pos.Bound
	}
	h.learn(p, bounds, true)
}

// movesOf returns the cover marks of totals (counterWrite.moves), by
// partition and thread.
func movesOf(totals map[driver.Partition]counterWrite) map[driver.Partition]map[string]driver.CoverChange {
	out := map[driver.Partition]map[string]driver.CoverChange{}
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
// on c#*).
func (s *Store) positionWrite(p driver.Partition, c driver.CoverChange) (types.TransactWriteItem, error) {
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
