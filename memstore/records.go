package memstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/stak/inbox/driver"
)

// maxGetKeys is the most keys of one GetRecords, as DynamoDB's BatchGetItem.
const maxGetKeys = 100

// PutMessage creates rec and its ledger entry, and the receipts of rec
// that receipts create, and adds deltas to their counters, all or
// nothing. A receipt as rec is ErrInvalidInput, and so are receipts
// driver.ValidatePutReceipts refuses and a call whose DynamoDB
// transaction would hold more than driver.MaxTransactItems items
// (driver.ValidatePutItems, of the deltas as they apply); a record
// already at rec's key or a receipt's is ErrExists and changes nothing,
// so a retry never applies twice.
func (s *Store) PutMessage(ctx context.Context, rec driver.Record, deltas []driver.Counter, receipts ...driver.Mark) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if rec.Receipt {
		return fmt.Errorf("%w: PutMessage of a receipt", driver.ErrInvalidInput)
	}
	if err := driver.ValidateDeltas(deltas); err != nil {
		return err
	}
	if !rec.Ledgered() {
		return fmt.Errorf("%w: message %s without a ledger entry", driver.ErrInvalidInput, rec.Message.ID)
	}
	if err := driver.ValidateEntry(rec); err != nil {
		return err
	}
	if err := driver.ValidateRecord(rec); err != nil {
		return err
	}
	if err := validateBucketed(rec); err != nil {
		return err
	}
	if err := driver.ValidatePutReceipts(rec, receipts); err != nil {
		return err
	}
	if err := driver.ValidateAggregatedPut(rec, deltas); err != nil {
		return err
	}
	if err := driver.ValidatePutItems(rec, deltas, receipts); err != nil {
		return err
	}
	if _, ok := s.records[rec.Key()]; ok {
		return fmt.Errorf("%w: message %s in %s", driver.ErrExists, rec.Message.ID, rec.Partition.PK())
	}
	if s.ledger.has(entryOf(rec)) {
		return fmt.Errorf("%w: ledger entry of message %s in %s", driver.ErrExists, rec.Message.ID, rec.Partition.PK())
	}
	if own := s.prefs[rec.Partition]; !rec.Partition.IsShared() && rec.Message.Category != "" && (own.Own && own.OptsOut(rec.Message.Category) || !own.Own && rec.OptOutDefault) {
		return fmt.Errorf("%w: %s opted out of category %q", driver.ErrOptedOut, rec.Partition.PK(), rec.Message.Category)
	}
	if driver.Coverable(rec) && s.covers(rec.Partition, "", rec.Message.Thread, rec.Message.ID) {
		return &driver.CoveredError{Partition: rec.Partition, Thread: rec.Message.Thread, ID: rec.Message.ID}
	}
	// An aggregated message's conditions: its thread's Latest, its
	// partition's watermark (a fence), the message it takes in (as Mark
	// checks it, and deletes it below).
	var replaced []driver.Mark
	fenced := false
	if rec.Message.Count > 0 {
		if got := s.counters[rec.Partition][driver.Counter{Thread: rec.Message.Thread}.SK()].Latest; got != rec.Follows {
			return fmt.Errorf("%w: thread %q of %s: latest %q, not %q", driver.ErrStateChanged, rec.Message.Thread, rec.Partition.PK(), got, rec.Follows)
		}
		for _, mk := range receipts {
			switch {
			case mk.Fence:
				if w := s.fenceOf(mk.Key.Partition); w != mk.Seen {
					return &driver.SeenError{Partition: mk.Key.Partition, Seen: w}
				}
				fenced = true
			default:
				replaced = append(replaced, mk)
			}
		}
		receipts = nil
	}
	made := make([]driver.Record, 0, len(receipts))
	for _, mk := range receipts {
		r := mk.EntryRecord()
		r.Counted = mk.To.Counted()
		if _, ok := s.records[r.Key()]; ok || s.ledger.has(entryOf(r)) {
			return fmt.Errorf("%w: receipt %s in %s", driver.ErrExists, r.Message.ID, r.Partition.PK())
		}
		made = append(made, r)
	}
	// The deltas as they apply: without the Above of a partition whose
	// watermark is not below rec's ID, which on DynamoDB makes the
	// transaction again without them, of more items (driver.PutItems).
	if !fenced {
		deltas = s.aboveIf(deltas, rec.Message.ID)
		if err := driver.ValidatePutItems(rec, deltas, receipts); err != nil {
			return err
		}
	}
	if len(replaced) > 0 {
		// Checked and applied as Mark would, all or nothing; the
		// deletion's counter changes are among deltas, below.
		if err := s.mark(replaced, nil); err != nil {
			return err
		}
	}
	r := rec.Clone()
	r.Counted, r.Timed, r.OptOutDefault, r.Follows = driver.CountedOf(r), "", false, ""
	if at := rec.Message.DeliverAt; !at.IsZero() {
		e := entry(rec)
		e.Message.DeliverAt = at
		r.Timed = driver.TimedKeyOf(e)
		s.putTimed(r.Timed, e)
	}
	s.insert(r)
	if r.Partition.IsShared() {
		s.bucket(r.Partition, r.Message.ID, driver.SliceOf(r), 1)
	}
	for i, mk := range receipts {
		s.insert(made[i])
		if mk.RecordsRecent() {
			s.recordRecent(mk)
		}
	}
	s.addDeltas(deltas)
	if rec.Message.Count > 0 {
		// An aggregated message's thread moves to it, whatever its ID: the
		// next message of the key follows it (Record.Follows).
		s.follow(rec.Partition, rec.Message.Thread, rec.Message.ID)
	}
	return nil
}

// follow sets the Latest of thread t's own counter in user partition p
// to id, as an aggregated message's write does. s.mu must be held.
func (s *Store) follow(p driver.Partition, t, id string) {
	k := driver.Counter{Thread: t}.SK()
	c, ok := s.counters[p][k]
	if !ok || c.Latest == id {
		return // the put's deltas made it (driver.ValidateAggregatedPut)
	}
	s.noteActivity(p, t, c.Latest, id)
	c.Latest = id
	s.counters[p][k] = c
}

// GetRecords returns copies of the records at keys (each once), leaving out
// missing keys. More than 100 distinct keys is ErrInvalidInput.
func (s *Store) GetRecords(ctx context.Context, keys []driver.Key) ([]driver.Record, error) {
	distinct := make(map[driver.Key]bool, len(keys))
	for _, k := range keys {
		distinct[k] = true
	}
	if len(distinct) > maxGetKeys {
		return nil, fmt.Errorf("%w: %d distinct keys, at most %d", driver.ErrInvalidInput, len(distinct), maxGetKeys)
	}
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]driver.Record, 0, len(distinct))
	for _, k := range keys {
		if !distinct[k] {
			continue // read already
		}
		distinct[k] = false
		if sr, ok := s.records[k]; ok {
			out = append(out, sr.rec.Clone())
		}
	}
	return out, nil
}

// Query evaluates the next q.Limit records of q.Partition below q.Before
// (and above q.After), newest first, then filters them; see driver.Query
// and driver.QueryResult. A user's unread feed and an unseen query
// evaluate only what the dynamo Store's unread index holds (see
// indexQuery), so that their pages are production's; so does a Scheduled
// query (scheduledQuery). A Limit below 1 is ErrInvalidInput.
func (s *Store) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	if q.Limit < 1 {
		return driver.QueryResult{}, fmt.Errorf("%w: query limit %d, want at least 1", driver.ErrInvalidInput, q.Limit)
	}
	if err := driver.ValidateQuery(q); err != nil {
		return driver.QueryResult{}, err
	}
	if err := s.begin(ctx); err != nil {
		return driver.QueryResult{}, err
	}
	defer s.mu.Unlock()
	if q.Readers {
		return s.readersQuery(q), nil
	}
	if q.Scheduled {
		return s.scheduledQuery(q), nil
	}
	if q.Thread != "" {
		return s.threadQuery(q), nil
	}
	if q.Snoozed {
		return s.snoozeQuery(q), nil
	}
	if q.Threads {
		return s.threadsQuery(q), nil
	}
	if q.Unseen || q.UnreadOnly && q.Archived == driver.NotArchived && !q.Partition.IsShared() {
		return s.indexQuery(q), nil
	}
	return s.evaluate(q, s.ids.get(q.Partition)), nil
}

// Mark checks every mark's condition, then applies all marks, writes or
// deletes their ledger and timed entries and adds deltas, or returns the
// first failure (ErrStateChanged, a *driver.SeenError, or ErrNotFound)
// and changes nothing. Marks see the marks before them in the batch, but
// two marks of one key are ErrStateChanged, as on DynamoDB. More than
// driver.MaxMarkBatch marks of records, a mark in a shared partition (but
// the fold of a scheduled broadcast), marks that contradict themselves
// (driver.ValidateMarks: a receipt of a broadcast the call folds, marks
// and deltas whose DynamoDB transaction would hold more than
// driver.MaxTransactItems items, ...), or an Above change without a fence
// of its partition, is ErrInvalidInput. A deleted record's removal
// reaches the stream (held with WithStreamLag), where it finds no entry
// and changes nothing.
func (s *Store) Mark(ctx context.Context, marks []driver.Mark, deltas []driver.Counter) error {
	if err := driver.ValidateMarks(marks, deltas); err != nil {
		return err
	}
	records := 0
	fenced := map[driver.Partition]bool{}
	for _, mk := range marks {
		if mk.Key.ID != "" {
			records++
		} else {
			fenced[mk.Key.Partition] = true
		}
	}
	if records > driver.MaxMarkBatch {
		return fmt.Errorf("%w: %d marks, at most %d", driver.ErrInvalidInput, records, driver.MaxMarkBatch)
	}
	for _, d := range deltas {
		if d.Above != 0 && !fenced[d.Partition] {
			return fmt.Errorf("%w: an above change of %s without a fence of its watermark", driver.ErrInvalidInput, d.Partition.PK())
		}
	}
	marked := make(map[driver.Key]bool, len(marks))
	for _, mk := range marks {
		if marked[mk.Key] {
			// As package dynamo's transaction, which cannot write one item
			// twice: the second would find the first's marks.
			return fmt.Errorf("%w: %s in %s marked twice", driver.ErrStateChanged, mk.Key.ID, mk.Key.Partition.PK())
		}
		marked[mk.Key] = true
	}
	if err := driver.ValidateDeltas(deltas); err != nil {
		return err
	}
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if len(marks) == 1 && marks[0].Preferences != nil {
		return s.setPreferences(marks[0])
	}
	return s.mark(marks, deltas)
}

// setPreferences applies preferences mark mk, as Mark does, after its
// validation: it replaces its partition's preferences if they are its
// From (and, if the mark is Versioned, its version is the mark's),
// writes the counters of the threads muted anew (Mark.Muted), drops those of the
// threads no longer muted, and changes the partition's version
// (creating its total at zero). s.mu must be held.
func (s *Store) setPreferences(mk driver.Mark) error {
	p := mk.Key.Partition
	ch := mk.Preferences
	old := s.prefs[p]
	if !old.Equal(ch.From) {
		return fmt.Errorf("%w: preferences of %s changed", driver.ErrStateChanged, p.PK())
	}
	if mk.Versioned && s.versions[p] != mk.Version {
		return fmt.Errorf("%w: counters of %s changed since version %d", driver.ErrStateChanged, p.PK(), mk.Version)
	}
	to := ch.To.Clone()
	for sk, c := range s.counters[p] {
		if !to.Keeps(c) {
			delete(s.counters[p], sk)
			delete(s.plain[p], sk)
		}
	}
	if to.IsZero() {
		delete(s.prefs, p)
	} else {
		s.prefs[p] = to
	}
	if mk.Muted != nil {
		s.resetMuted(p, *mk.Muted) // its threads are muted now
	}
	s.addDeltas([]driver.Counter{{Partition: p}})
	s.notePreferences(p, old, to)
	return nil
}

// mark checks and applies marks and deltas, as Mark does, after their
// validation. s.mu must be held.
func (s *Store) mark(marks []driver.Mark, deltas []driver.Counter) error {
	// staged holds the records as the marks so far leave them; nil for a
	// record a mark removes.
	staged := make(map[driver.Key]*driver.Record, len(marks))
	seen := map[driver.Partition]string{}
	get := func(k driver.Key) (driver.Record, bool) {
		if r, ok := staged[k]; ok {
			if r == nil {
				return driver.Record{}, false
			}
			return *r, true
		}
		sr, ok := s.records[k]
		if !ok {
			return driver.Record{}, false
		}
		return sr.rec, true
	}
	for _, mk := range marks {
		p := mk.Key.Partition
		if c := mk.Cover; c != nil {
			if err := s.checkCover(p, *c, mk.Version, deltas); err != nil {
				return err
			}
			continue
		}
		if mk.Fence {
			if w := s.fenceOf(p); w != mk.Seen {
				return &driver.SeenError{Partition: p, Seen: w}
			}
			continue
		}
		if mk.Seen != "" {
			cur, ok := seen[p]
			if !ok {
				cur = s.seen[p]
			}
			if cur >= mk.Seen {
				return fmt.Errorf("%w: seen watermark of %s is %q", driver.ErrStateChanged, p.PK(), cur)
			}
			if mk.Versioned && s.versions[p] != mk.Version {
				return fmt.Errorf("%w: counters of %s changed since version %d", driver.ErrStateChanged, p.PK(), mk.Version)
			}
			if mk.Muted != nil {
				for _, t := range mk.Muted.Threads {
					if !s.mutes(p, t) {
						return fmt.Errorf("%w: thread %q of %s is not muted", driver.ErrStateChanged, t, p.PK())
					}
				}
			}
			seen[p] = mk.Seen
			continue
		}
		puts, _ := mk.TimedWrites()
		timed := ""
		for _, e := range puts {
			timed = driver.TimedKeyOf(e)
		}
		rec, exists := get(mk.Key)
		if !mk.Receipt {
			switch {
			case !exists || rec.Receipt || !mk.Now.Before(rec.Message.ExpiresAt) || !sameMessage(rec, mk):
				return fmt.Errorf("%w: message %s in %s", driver.ErrNotFound, mk.Key.ID, p.PK())
			case !sameMarks(rec, mk.From) || rec.Ledgered() && rec.Entry != mk.Entry || mk.Counted != 0 && rec.Counted != mk.Counted || rec.Timed != mk.Timed:
				// Other marks, or another ledger entry (the message was
				// adopted meanwhile), or other counted marks, or another
				// timed entry (folded meanwhile): the state read is stale.
				return fmt.Errorf("%w: message %s in %s", driver.ErrStateChanged, mk.Key.ID, p.PK())
			case mk.Delete:
				staged[mk.Key] = nil
				continue
			}
			if mk.From != mk.To && mk.To.ReadAt.IsZero() && driver.Coverable(rec) && s.covers(p, "", rec.Message.Thread, rec.Message.ID) {
				// Made without the read the position lends the record
				// (driver.Mark.UnreadOverCover): it would drop it.
				return &driver.CoveredError{Partition: p, Thread: rec.Message.Thread, ID: rec.Message.ID}
			}
			if mk.MadeUncovered() && s.covers(p, "", rec.Message.Thread, rec.Message.ID) {
				// Made by a writer that read the record uncovered
				// (driver.Mark.MadeUncovered): the position read it first.
				return &driver.CoveredError{Partition: p, Thread: rec.Message.Thread, ID: rec.Message.ID}
			}
			rec = withMarks(rec, mk.To)
			rec.Entry, rec.Counted, rec.Timed = mk.Entry, mk.To.Counted(), timed
			if mk.From != mk.To && driver.Coverable(rec) && s.covers(p, "", rec.Message.Thread, rec.Message.ID) {
				return &driver.CoveredError{Partition: p, Thread: rec.Message.Thread, ID: rec.Message.ID}
			}
			if p.IsShared() {
				rec.Counted = 0
			}
			staged[mk.Key] = &rec
			continue
		}
		// The receipt's conditions first, then its broadcast's, in the
		// order package dynamo's transaction reports them.
		shared := driver.Key{Partition: mk.Shared, ID: mk.Key.ID}
		b, found := get(shared)
		switch {
		case (exists || !mk.From.IsZero()) && (!exists || !rec.Receipt || rec.Ledgered() && rec.Entry != mk.Entry || !sameMarks(rec, mk.From) || mk.Counted != 0 && rec.Counted != mk.Counted || rec.Timed != mk.Timed):
			// Another receipt than read: with other marks (a receipt
			// without marks for From zero, or none), entry, counted
			// marks or timed entry.
			return fmt.Errorf("%w: receipt %s in %s", driver.ErrStateChanged, mk.Key.ID, p.PK())
		case !found || !mk.Now.Before(b.Message.ExpiresAt) || !sameMessage(b, mk):
			return fmt.Errorf("%w: broadcast %s in %s", driver.ErrNotFound, shared.ID, shared.Partition.PK())
		case mk.UnreadOverCover() && s.covers(p, mk.Shared.Group, mk.Thread, mk.Key.ID):
			// Made without the read her position in the group's thread
			// lends the message: it would drop it.
			return &driver.CoveredError{Partition: p, Thread: mk.Thread, Group: mk.Shared.Group, ID: mk.Key.ID}
		case mk.To.IsZero():
			staged[mk.Key] = nil
		default:
			r := mk.EntryRecord()
			r.Counted, r.Timed = mk.To.Counted(), timed
			staged[mk.Key] = &r
		}
	}
	for k, rec := range staged {
		if sr, ok := s.records[k]; ok {
			if rec == nil || rec.Entry != sr.rec.Entry {
				s.ledger.del(entryOf(sr.rec))
			}
			if rec == nil {
				s.removed(sr.rec, s.drop(k, false), false)
				continue
			}
			s.noteChange(driver.ChangeModify, &sr.rec, rec, false)
			s.indexed(&sr.rec, rec)
			s.threaded(&sr.rec, rec)
			sr.rec = *rec // the same expiry: its schedule stands
		} else if rec != nil {
			s.insert(*rec)
		}
		if rec != nil {
			s.ledger.put(entryOf(*rec), entry(*rec))
		}
	}
	for _, mk := range marks {
		puts, dels := mk.TimedWrites()
		for _, del := range dels {
			s.delTimed(mk.Key.Partition, del)
		}
		for _, e := range puts {
			s.putTimed(driver.TimedKeyOf(e), e)
		}
	}
	for p, w := range seen {
		s.noteSeen(p, w)
		s.seen[p] = w
		s.fence[p] = w
	}
	for _, mk := range marks {
		if mk.RecordsRecent() {
			s.recordRecent(mk)
		}
	}
	s.readerChanges(marks)
	for _, mk := range marks {
		if mk.Muted != nil {
			s.resetMuted(mk.Key.Partition, *mk.Muted)
		}
	}
	s.addDeltas(deltas)
	for _, mk := range marks {
		if mk.Cover != nil {
			s.setCover(mk.Key.Partition, *mk.Cover)
		}
	}
	return nil
}

// checkCover checks the conditions of cover change c of user partition p
// (see driver.CoverChange), with the call's deltas. s.mu must be held.
func (s *Store) checkCover(p driver.Partition, c driver.CoverChange, version int64, deltas []driver.Counter) error {
	if cur := s.counters[p][driver.CoveredCounterSK("", c.Thread, c.Group)].Position; !cur.Equal(c.From) {
		return fmt.Errorf("%w: read position of thread %q in %s moved", driver.ErrStateChanged, c.Thread, p.PK())
	}
	if s.versions[p] != version {
		return fmt.Errorf("%w: counters of %s changed since version %d", driver.ErrStateChanged, p.PK(), version)
	}
	if c.To.IsZero() {
		// The thread's covered counters as the call's deltas leave them
		// (those of a record, as the position covers it) count nothing.
		after := map[string]driver.Counter{}
		for sk, cnt := range s.counters[p] {
			if cnt.Covered && cnt.Thread == c.Thread && cnt.Group == c.Group {
				after[sk] = cnt.Tallies()
			}
		}
		for _, d := range deltas {
			if d.Partition != p || !d.Covered || d.Thread != c.Thread || d.Group != c.Group || d.Of != "" && !c.From.Covers(d.Of) {
				continue
			}
			cnt := after[d.SK()]
			cnt.Add(d.Tallies())
			after[d.SK()] = cnt
		}
		for _, cnt := range after {
			if !cnt.IsZero() {
				return fmt.Errorf("%w: read position of thread %q in %s covers records", driver.ErrStateChanged, c.Thread, p.PK())
			}
		}
	}
	return nil
}

// setCover moves the read position of c's thread in user partition p to
// c.To, after the call's deltas: it drops the thread's covered counters
// with To zero. s.mu must be held.
func (s *Store) setCover(p driver.Partition, c driver.CoverChange) {
	if c.To.IsZero() {
		for sk, cnt := range s.counters[p] {
			if cnt.Covered && cnt.Thread == c.Thread && cnt.Group == c.Group {
				delete(s.counters[p], sk)
				delete(s.plain[p], sk)
			}
		}
		s.versions[p]++
		s.notePosition(p, c, driver.ChangeRemove)
		return
	}
	sk := driver.CoveredCounterSK("", c.Thread, c.Group)
	cnt, ok := s.counters[p][sk]
	op := driver.ChangeModify
	if !ok {
		op = driver.ChangeInsert
	}
	defer s.notePosition(p, c, op)
	if !ok {
		cnt = driver.Counter{Partition: p, Thread: c.Thread, Group: c.Group, Covered: true}
		if s.counters[p] == nil {
			s.counters[p] = map[string]driver.Counter{}
		}
		s.notePlain(cnt)
	}
	cnt.Position = c.To
	s.counters[p][sk] = cnt
	s.versions[p]++
	if c.Group != "" {
		gp := driver.Partition{Tenant: p.Tenant, Inbox: p.Inbox, Group: c.Group}
		if s.readers[gp] == nil {
			s.readers[gp] = map[string]storedReader{}
		}
		s.readers[gp][driver.ReaderPositionSK(c.Thread, p.User)] = storedReader{r: driver.Reader{Partition: gp, Thread: c.Thread, User: p.User, Position: c.To}, seq: s.nextSeq()}
	}
}

// resetMuted sets the counters of the muted threads of r in partition p
// anew (see driver.MutedReset). s.mu must be held.
func (s *Store) resetMuted(p driver.Partition, r driver.MutedReset) {
	for sk, c := range s.counters[p] {
		if c.Muted && slices.Contains(r.Threads, c.Thread) {
			delete(s.counters[p], sk)
			delete(s.plain[p], sk)
		}
	}
	cs := slices.DeleteFunc(slices.Clone(r.Counters), func(c driver.Counter) bool { return c.IsZero() })
	s.addDeltas(append(cs, driver.Counter{Partition: p})) // and the version moves, as with any write of c#*
}

// recordRecent records the receipt mk creates among its partition's
// recent receipts, and clears the slot RecentSlots says. s.mu must be
// held.
func (s *Store) recordRecent(mk driver.Mark) {
	p := mk.Key.Partition
	slots := s.recent[p]
	if slots == nil {
		slots = new([driver.RecentSlotCount]map[driver.Key]bool)
		s.recent[p] = slots
	}
	add, clear := driver.RecentSlots(mk.Now)
	slots[clear] = nil
	if slots[add] == nil {
		slots[add] = map[driver.Key]bool{}
	}
	slots[add][driver.Key{Partition: mk.Shared, ID: mk.Key.ID}] = true
}

// sameMarks reports whether rec has the marks st sets (interacted too),
// and st's snooze.
func sameMarks(rec driver.Record, st driver.State) bool {
	have := rec.State()
	return have.Same(st) && have.SnoozedUntil.Equal(st.SnoozedUntil) && have.InteractedAt.IsZero() == st.InteractedAt.IsZero()
}

// withMarks returns rec with the marks st.
func withMarks(rec driver.Record, st driver.State) driver.Record {
	rec.Message.ReadAt, rec.Message.ArchivedAt, rec.DeletedAt, rec.Message.SnoozedUntil, rec.Message.InteractedAt = st.ReadAt, st.ArchivedAt, st.DeletedAt, st.SnoozedUntil, st.InteractedAt
	return rec
}

// sameMessage reports whether mk was made for rec: same category and
// expiry (its ledger entry records them).
func sameMessage(rec driver.Record, mk driver.Mark) bool {
	return rec.Message.Category == mk.Category && rec.Message.ExpiresAt.Equal(mk.ExpiresAt) &&
		(mk.DeliverAt.IsZero() || rec.Message.DeliverAt.Equal(mk.DeliverAt))
}

// Delete removes the record at k, as a DynamoDB DeleteItem would, and
// accounts its removal as the stream handler would (at once, or when
// delivered with WithStreamLag). It reports whether a record was there.
// Use it to test what a manual delete does to counts.
func (s *Store) Delete(ctx context.Context, k driver.Key) (bool, error) {
	if err := s.begin(ctx); err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	sr, ok := s.records[k]
	if !ok {
		return false, nil
	}
	s.removed(sr.rec, s.drop(k, false), false)
	return true, nil
}

// insert stores rec (which must be a copy no caller holds and whose key is
// free) with its ledger entry, and schedules its expiry. s.mu must be held.
func (s *Store) insert(rec driver.Record) {
	k := rec.Key()
	sr := &storedRecord{rec: rec, seq: s.nextSeq()}
	s.records[k] = sr
	s.ids.insert(k.Partition, k.ID)
	s.indexed(nil, &rec)
	s.threaded(nil, &rec)
	s.ledger.put(entryOf(rec), entry(rec))
	s.expire(expiry{at: rec.Message.ExpiresAt, kind: expireRecord, seq: sr.seq, key: k})
	s.noteChange(driver.ChangeInsert, nil, &rec, false)
}

// drop deletes the record at k, which must exist, leaving its ledger entry
// and counters alone, and returns the ID of its removal (of its change,
// with WithChanges); byTTL says expiry made it. s.mu must be held.
func (s *Store) drop(k driver.Key, byTTL bool) string {
	old := s.records[k].rec
	id := s.noteChange(driver.ChangeRemove, &old, nil, byTTL)
	delete(s.records, k)
	s.ids.remove(k.Partition, k.ID)
	s.indexed(&old, nil)
	s.threaded(&old, nil)
	return id
}

// entryOf returns the key of rec's ledger entry.
func entryOf(rec driver.Record) entryKey {
	return entryKey{p: rec.Partition, entry: rec.Entry}
}

// entry returns rec's ledger entry: what it adds to the counters (its
// thread and a receipt's group among them).
func entry(rec driver.Record) driver.Record {
	e := driver.Record{Partition: rec.Partition, Receipt: rec.Receipt, Entry: rec.Entry, DeletedAt: rec.DeletedAt, Message: driver.Message{
		ID:         rec.Message.ID,
		Category:   rec.Message.Category,
		Thread:     rec.Message.Thread,
		ReadAt:     rec.Message.ReadAt,
		ArchivedAt: rec.Message.ArchivedAt,
		ExpiresAt:  rec.Message.ExpiresAt,
	}}
	if rec.Receipt {
		e.Message.Audience.Group = rec.Message.Audience.Group
	}
	return e
}
