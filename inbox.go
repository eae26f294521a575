package inbox

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stak/inbox/driver"
)

// Inbox is a per-user notification inbox over a Store. It holds all the
// logic: validation, IDs, TTL resolution, the merge of user and public
// feeds, count arithmetic and the accounting of removed records.
//
// An Inbox is safe for concurrent use by multiple goroutines; create one per
// process and share it.
type Inbox struct {
	store       Store
	clock       func() time.Time
	concurrency int
	cursorKey   []byte
	configs     configCache
	events      EventHandler
	seen        seenCache
	noReceipts  keySet // users' receipts of tombstoned broadcasts found missing
	freshness   time.Duration
	backend     SharedBackend
	cache       *sharedCache // the Store, through the shared partitions' cache
	hooks       Hooks

	idMu    sync.Mutex
	entropy *ulid.MonotonicEntropy
}

// Option configures an Inbox.
type Option func(*Inbox)

// WithClock sets the clock (default time.Now; nil keeps the default).
// Tests and examples pass a fixed or fake clock to get deterministic times
// and IDs.
func WithClock(now func() time.Time) Option {
	return func(ib *Inbox) {
		if now != nil {
			ib.clock = now
		}
	}
}

// WithEntropy sets the source of randomness of message IDs (default
// crypto/rand; nil keeps the default). IDs are ULIDs of the clock's time
// and this entropy, made monotonic within a millisecond; with a fixed clock
// and a seeded reader they are deterministic.
func WithEntropy(r io.Reader) Option {
	return func(ib *Inbox) {
		if r != nil {
			ib.entropy = ulid.Monotonic(r, 0)
		}
	}
}

// WithConfigCacheTTL sets how long tenant settings and inbox configs are
// cached (default one minute; zero or less disables the cache).
func WithConfigCacheTTL(d time.Duration) Option { return func(ib *Inbox) { ib.configs.ttl = d } }

// WithConcurrency sets how many store calls one Publish, MarkAllRead or
// StreamHandler call makes at once (default 16, at least 1).
func WithConcurrency(n int) Option { return func(ib *Inbox) { ib.concurrency = max(n, 1) } }

// WithCursorSecret sets the key that signs List cursors. The default key
// is a constant written in this package's source, so anyone can sign
// cursors with it: cursors are still bound to the user and filters they
// were issued for, but a client could forge a position in its own feed.
// In production pass a secret of your own (at least 32 random bytes,
// shared by every process serving the same users).
func WithCursorSecret(key []byte) Option {
	return func(ib *Inbox) { ib.cursorKey = append([]byte(nil), key...) }
}

// Store persists an Inbox's records: the contract a storage backend
// implements, defined with its record types in the driver package. Pass
// the dynamo package's Store in production and the memstore package's in
// tests; write one only to put the Inbox on other storage (see Store
// and the storetest conformance suite).
type Store = driver.Store

// New returns an Inbox over store.
func New(store Store, opts ...Option) *Inbox {
	ib := &Inbox{
		store:       store,
		clock:       time.Now,
		concurrency: 16,
		cursorKey:   []byte("github.com/stak/inbox cursor v1"),
		configs:     configCache{ttl: time.Minute, entries: map[Scope]cachedConfig{}},
		freshness:   DefaultSharedFreshness,
	}
	for _, o := range opts {
		o(ib)
	}
	ib.cache = newSharedCache(ib.instrument(store), ib.freshness, ib.clock, ib.backend)
	ib.cache.hook = ib.hooks.SharedCache
	ib.store = ib.cache
	if ib.entropy == nil {
		ib.entropy = ulid.Monotonic(rand.Reader, 0)
	}
	return ib
}

// Store returns the Inbox's store.
func (ib *Inbox) Store() Store { return ib.store }

// now returns the clock's time in UTC, truncated to the second precision
// records are stored with.
func (ib *Inbox) now() time.Time { return ib.clock().UTC().Truncate(time.Second) }

// newID returns a new ULID for time t. It fails only if the entropy source
// does.
func (ib *Inbox) newID(t time.Time) (string, error) {
	ib.idMu.Lock()
	defer ib.idMu.Unlock()
	id, err := ulid.New(ulid.Timestamp(t), ib.entropy)
	if err != nil {
		return "", fmt.Errorf("inbox: new message id: %w", err)
	}
	return id.String(), nil
}

// newScheduledID returns a new ULID for the delivery time t of a
// scheduled message, with random entropy of its own: minting it from the
// Inbox's monotonic source would restart that source's sequence, and the
// next ID of the current millisecond could sort below the last one.
func newScheduledID(t time.Time) (string, error) {
	id, err := ulid.New(ulid.Timestamp(t), rand.Reader)
	if err != nil {
		return "", fmt.Errorf("inbox: new message id: %w", err)
	}
	return id.String(), nil
}

// PublishResult reports what a Publish did for each recipient.
type PublishResult struct {
	// Message is one recipient's copy as stored: each copy names only its
	// own recipient in Audience.UIDs (Delivered and Duplicates list them
	// all). On a retry with the same HostSystemID it is a copy stored by the
	// first attempt.
	Message Message
	// Delivered lists users who received a new copy.
	Delivered []string
	// Duplicates lists users who already had this message: a retry with
	// the same HostSystemID.
	Duplicates []string
	// OptedOut lists users who opted out of the message's category (see
	// Preferences.OptedOut, as they stood at the write, or the defaults
	// for a user without her own): no copy was stored for them, and none
	// will be on a retry while they stay opted out. The sender is no
	// exception: her preferences hold for her own copy too.
	OptedOut []string
	// Failed maps each user whose copy was not written to the error: the
	// store refused the write (bad input, throttling after the client's
	// retries), or ctx was done before the write began. Retrying them
	// gives each one copy, with or without the HostSystemID.
	Failed map[string]error
	// Unknown maps each user whose copy may or may not have been written
	// to the error: ctx was cancelled or its deadline passed while the
	// write was in flight, or the store failed in a way that does not say
	// (a network or internal error). Such a write may still be applied
	// after Publish returns. Retry them with the same HostSystemID: those
	// who have the copy are reported as Duplicates, and none gets two.
	// Without a HostSystemID a retry is a new message, which can give
	// them two copies.
	Unknown map[string]error
}

// PublishError is returned by Publish when some recipients failed or their
// outcome is unknown; the others were delivered. It unwraps to each
// recipient's error, so errors.Is finds each cause, and it matches
// ErrOutcomeUnknown when Unknown is not empty.
type PublishError struct {
	// Failed maps each user whose copy was not written to the error
	// (PublishResult.Failed).
	Failed map[string]error
	// Unknown maps each user whose copy may or may not have been written
	// to the error (PublishResult.Unknown).
	Unknown map[string]error
}

// Error summarises the failures and the unknown outcomes.
func (e *PublishError) Error() string {
	var parts []string
	if s := firstOf(e.Failed); s != "" {
		parts = append(parts, fmt.Sprintf("inbox: publish failed for %d recipient(s), first %s", len(e.Failed), s))
	}
	if s := firstOf(e.Unknown); s != "" {
		parts = append(parts, fmt.Sprintf("inbox: publish outcome unknown for %d recipient(s), first %s", len(e.Unknown), s))
	}
	if len(parts) == 0 {
		return "inbox: publish failed"
	}
	return strings.Join(parts, "; ")
}

// firstOf returns the first user of errs, in order, quoted, with its
// error; "" if errs is empty.
func firstOf(errs map[string]error) string {
	if len(errs) == 0 {
		return ""
	}
	u := slices.Min(slices.Collect(maps.Keys(errs)))
	return fmt.Sprintf("%q: %v", u, errs[u])
}

// Unwrap returns each recipient's error.
func (e *PublishError) Unwrap() []error {
	out := make([]error, 0, len(e.Failed)+len(e.Unknown))
	for _, err := range e.Failed {
		out = append(out, err)
	}
	for _, err := range e.Unknown {
		out = append(out, err)
	}
	return out
}

// Is reports whether target is ErrOutcomeUnknown and some recipient's
// outcome is unknown.
func (e *PublishError) Is(target error) bool {
	return target == ErrOutcomeUnknown && len(e.Unknown) > 0
}

// refused reports whether err, a Store's error for a write, says that the
// write was not applied: it matches a sentinel of a refusal, and neither
// context.Canceled nor context.DeadlineExceeded. Any other error (a
// cancellation, a network or internal error) leaves the outcome unknown.
func refused(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	for _, sentinel := range []error{ErrInvalidKey, ErrInvalidTTL, ErrInvalidInput, ErrTooLarge, ErrThrottled, ErrConflict, ErrUnsupported} {
		if errors.Is(err, sentinel) {
			return true
		}
	}
	return false
}

// unknownOutcome returns err, a Store's error for a write, matching
// ErrOutcomeUnknown too unless it says the write was not applied: a
// refusal (refused), or the write's conditions failing (ErrStateChanged,
// a *driver.SeenError among them, ErrNotFound, ErrExists, ErrOptedOut).
// A cancellation or a network error leaves it unknown: the write may
// have been in flight, and applied.
func unknownOutcome(err error) error {
	inFlight := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	if err == nil || refused(err) || !inFlight && (errors.Is(err, driver.ErrStateChanged) || errors.Is(err, ErrNotFound) ||
		errors.Is(err, driver.ErrExists) || errors.Is(err, driver.ErrOptedOut)) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
}

// Publish stores one message for each of users in inbox s, under one ID
// shared by every copy. Each copy and its counters (the user's c#* and
// c#<category>) are written atomically, up to WithConcurrency copies at a
// time. In a thread, the sender's copy is written read (see Draft.Sender).
// A user who opted out of the draft's category gets no copy (the write's
// condition on her counters, at no cost more): PublishResult.OptedOut
// names her, and that is no error.
//
// All input is validated first; bad input writes nothing. A store failure
// for some recipients does not undo the others: the result lists who got
// the message, who did not (Failed) and whose outcome is unknown
// (Unknown), and the error is a *PublishError naming the last two. A copy
// whose write was in flight when ctx was cancelled or its deadline passed
// may be stored, now or after Publish returns: its user is Unknown, and
// the error matches ErrOutcomeUnknown. Retry with the same HostSystemID:
// retrying everyone is safe, those who have the copy are reported as
// Duplicates and none gets two. Without a HostSystemID a retry is a new
// message: a caller that may retry gives every publish one (see Decisions
// in docs/concepts.md). If every recipient failed for the same reason of
// bad input (ErrInvalidInput, ErrInvalidKey or ErrTooLarge, which the
// store found), that error is returned instead.
func (ib *Inbox) Publish(ctx context.Context, s Scope, users []string, d Draft) (_ PublishResult, err error) {
	defer ib.observe(&ctx, "Publish", s, "").end(&err)
	if err := s.Validate(); err != nil {
		return PublishResult{}, err
	}
	if len(users) == 0 {
		return PublishResult{}, fmt.Errorf("%w: no recipients", ErrInvalidInput)
	}
	seen := make(map[string]bool, len(users))
	uniq := make([]string, 0, len(users))
	for _, u := range users {
		if err := driver.ValidateUserID(u); err != nil {
			return PublishResult{}, err
		}
		if !seen[u] {
			seen[u] = true
			uniq = append(uniq, u)
		}
	}
	msg, cfg, err := ib.prepare(ctx, s, d, Audience{Kind: AudienceUsers, Label: d.Label})
	if err != nil {
		return PublishResult{}, err
	}

	res := PublishResult{Message: msg}
	sender := senderOf(d)
	// A user without preferences of her own follows the defaults, of the
	// config prepare read for the TTL: if they opt out of the category,
	// she gets no copy unless hers opt in.
	optOutDefault := cfg.DefaultPreferences().OptsOut(d.Category)
	outcome := make([]error, len(uniq))
	sent := make([]bool, len(uniq))
	copies := make([]driver.Record, len(uniq)) // an aggregated message's, as written
	ib.each(len(uniq), func(i int) {
		if err := ctx.Err(); err != nil {
			outcome[i] = fmt.Errorf("inbox: publish stopped before this copy's write: %w", err)
			return
		}
		m := msg
		m.Audience.UIDs = []string{uniq[i]}
		if uniq[i] == sender {
			m.ReadAt = m.DeliveredAt // her own message: read, in the same write
		}
		p := s.User(uniq[i]).Partition()
		rec := newRecord(p, m)
		rec.OptOutDefault = optOutDefault
		sent[i] = true
		if m.Count > 0 {
			copies[i], outcome[i] = ib.putAggregated(ctx, s.User(uniq[i]), rec, bounds{window: d.AggregateWindow, max: d.AggregateMax})
			return
		}
		outcome[i] = ib.putCopy(ctx, s.User(uniq[i]), rec)
	})
	for i, u := range uniq {
		switch err := outcome[i]; {
		case err == nil:
			res.Delivered = append(res.Delivered, u)
		case errors.Is(err, driver.ErrExists):
			res.Duplicates = append(res.Duplicates, u)
		case errors.Is(err, driver.ErrOptedOut):
			res.OptedOut = append(res.OptedOut, u)
		case !sent[i] || refused(err) || errors.As(err, new(notWritten)):
			res.Failed = setErr(res.Failed, u, err)
		default:
			res.Unknown = setErr(res.Unknown, u, err)
		}
	}
	var perr error
	if len(res.Failed)+len(res.Unknown) > 0 {
		perr = &PublishError{Failed: res.Failed, Unknown: res.Unknown}
		if err := commonBadInput(res.Failed, len(uniq)); err != nil {
			perr = err
		}
	}
	res.Message.Audience.UIDs = []string{uniq[0]}
	if uniq[0] == sender {
		res.Message.ReadAt = msg.DeliveredAt
	}
	if msg.Count > 0 && copies[0].Message.ID != "" {
		// The first user's item, as her copy joined it (or as it
		// stood, with her copy in it, for a duplicate).
		res.Message = copies[0].Message
		return res, perr
	}
	if len(res.Duplicates) > 0 {
		stored, err := ib.stored(ctx, driver.Key{Partition: s.User(res.Duplicates[0]).Partition(), ID: msg.ID})
		if err != nil {
			return res, errors.Join(perr, fmt.Errorf("inbox: reading the first attempt's copy: %w", err))
		}
		res.Message = stored
	}
	return res, perr
}

// setErr sets m[u] to err, making m if it is nil, and returns m.
func setErr(m map[string]error, u string, err error) map[string]error {
	if m == nil {
		m = map[string]error{}
	}
	m[u] = err
	return m
}

// commonBadInput returns one of the failures if all n recipients failed and
// every failure is the same kind of bad input; else nil.
func commonBadInput(failed map[string]error, n int) error {
	if len(failed) != n {
		return nil
	}
	for _, sentinel := range []error{ErrInvalidInput, ErrInvalidKey, ErrTooLarge} {
		var first error
		for _, err := range failed {
			if !errors.Is(err, sentinel) {
				first = nil
				break
			}
			if first == nil {
				first = err
			}
		}
		if first != nil {
			return first
		}
	}
	return nil
}

// Broadcast stores one message for everyone in inbox s, once, in the public
// partition, with the public counters, in one atomic write: the cost is the
// same for any number of users. Users see it in List merged with their own
// messages, and it counts in their Counts.
//
// A broadcast retried with the same HostSystemID writes nothing more and
// returns the message the first attempt stored. An error matching
// ErrOutcomeUnknown (ctx was cancelled or its deadline passed while the
// write was in flight, say) leaves the broadcast stored or not, perhaps
// after the call returns: retry with the same HostSystemID, which stores
// it once. Without one, a retry can store it twice.
func (ib *Inbox) Broadcast(ctx context.Context, s Scope, d Draft) (_ Message, err error) {
	defer ib.observe(&ctx, "Broadcast", s, "").end(&err)
	return ib.broadcast(ctx, s, PublicGroup, d)
}

// BroadcastGroup stores one message for the members of group in inbox s,
// once, in the group's partition, with the group's counters, in one atomic
// write (with, in a thread, the sender's read receipt: see Draft.Sender):
// the cost is the same for a group of ten or of ten million. Members
// see it in List and Counts when the User they pass lists the group (the
// host application knows who is in it); a user who leaves the group stops
// seeing it, and the reads of it stop counting.
//
// Choose it over Publish for any audience the host can name: Publish
// writes a copy, and a transaction, per recipient. A retry with the same
// HostSystemID writes nothing more and returns the message the first
// attempt stored; after an error matching ErrOutcomeUnknown, retry so, as
// with Broadcast. group is a key (PublicGroup is the same as Broadcast).
func (ib *Inbox) BroadcastGroup(ctx context.Context, s Scope, group string, d Draft) (_ Message, err error) {
	defer ib.observe(&ctx, "BroadcastGroup", s, "").end(&err)
	if err := driver.ValidateGroup(group); err != nil {
		return Message{}, err
	}
	return ib.broadcast(ctx, s, group, d)
}

// broadcast stores d once in the partition of group of s.
func (ib *Inbox) broadcast(ctx context.Context, s Scope, group string, d Draft) (Message, error) {
	if err := s.Validate(); err != nil {
		return Message{}, err
	}
	aud := driver.Audience{Kind: AudienceEveryone, Label: d.Label}
	if group != driver.PublicGroup {
		aud = driver.Audience{Kind: AudienceGroup, Label: d.Label, Group: group}
	}
	if d.Aggregate != "" {
		return Message{}, fmt.Errorf("%w: a broadcast or group message cannot be aggregated (Draft.Aggregate): publish it to users", ErrInvalidInput)
	}
	msg, _, err := ib.prepare(ctx, s, d, aud)
	if err != nil {
		return Message{}, err
	}
	if err := ctx.Err(); err != nil {
		return Message{}, fmt.Errorf("inbox: broadcast stopped before its write: %w", err)
	}
	p := s.Group(group)
	rec := newRecord(p, msg)
	deltas := driver.PutDeltas(rec)
	var receipts []driver.Mark
	if sender := senderOf(d); sender != "" {
		// The sender's read of her own message, in the same write: her
		// receipt and her counters as MarkRead would leave them (the
		// store applies her Above only if her watermark is below it).
		mk := markFor(s.User(sender), rec, nil, driver.State{ReadAt: msg.DeliveredAt}, msg.DeliveredAt)
		receipts = append(receipts, mk)
		deltas = driver.MergeCounters(slices.Concat(deltas, driver.MarkDeltas(mk), driver.AboveDeltas(mk, "")))
	}
	err = ib.store.PutMessage(ctx, rec, deltas, receipts...)
	switch {
	case errors.Is(err, driver.ErrExists):
		return ib.stored(ctx, driver.Key{Partition: p, ID: msg.ID})
	case err != nil:
		return Message{}, unknownOutcome(err)
	}
	return msg, nil
}

// senderOf returns the user who sends d, whose own message is read for
// her: d's Sender in a thread, else "" (see Draft.Sender).
func senderOf(d Draft) string {
	if d.Thread == "" && d.Aggregate == "" {
		return ""
	}
	return d.Sender
}

// newRecord returns the record of m in p, with a new ledger entry (and,
// scheduled, its pending entry).
func newRecord(p Partition, m Message) driver.Record {
	rec := driver.Record{Partition: p, Message: m, Entry: driver.NewLedgerSK(m.ExpiresAt, m.ID)}
	if !m.DeliverAt.IsZero() {
		rec.Timed = driver.TimedKey(m.DeliverAt, rec.Entry, true) // its pending entry
	}
	return rec
}

// stored reads the message at k.
func (ib *Inbox) stored(ctx context.Context, k driver.Key) (Message, error) {
	recs, err := ib.store.GetRecords(ctx, []driver.Key{k})
	if err != nil {
		return Message{}, err
	}
	if len(recs) == 0 {
		return Message{}, ErrNotFound
	}
	return recs[0].Message, nil
}

// prepare validates d and returns the message to store: its ID (claimed for
// the host system ID, if any), times and expiry; and the config it read
// for them.
func (ib *Inbox) prepare(ctx context.Context, s Scope, d Draft, aud Audience) (Message, Config, error) {
	d, err := validateDraft(d)
	if err != nil {
		return Message{}, Config{}, err
	}
	cfg, err := ib.config(ctx, s)
	if err != nil {
		return Message{}, Config{}, err
	}
	ttl, err := resolveTTL(d.TTL, d.Category, cfg)
	if err != nil {
		return Message{}, Config{}, err
	}
	now := ib.now()
	received := d.ReceivedAt.UTC().Truncate(time.Second)
	if d.ReceivedAt.IsZero() {
		received = now
	}
	at, delivered := d.DeliverAt.UTC().Truncate(time.Second), now
	idTime := ib.clock()
	standing := false
	if !d.DeliverAt.IsZero() && d.Thread == "" && !at.After(now) {
		if standing, err = ib.standingClaim(ctx, s, d, aud, now); err != nil {
			return Message{}, Config{}, err
		}
	}
	switch {
	case d.DeliverAt.IsZero():
	case d.Thread != "":
		return Message{}, Config{}, fmt.Errorf("%w: a message in a thread cannot be scheduled", ErrInvalidInput)
	case !at.After(now) && !standing:
		return Message{}, Config{}, fmt.Errorf("%w: delivery time %v is not after now (%v)", ErrInvalidInput, at, now)
	case !at.After(now):
		// A retry of a scheduled publish, now due: the same message.
		delivered, idTime = at, at
	case at.After(now.Add(MaxTTL)):
		return Message{}, Config{}, fmt.Errorf("%w: delivery time %v is more than %v ahead", ErrInvalidInput, at, MaxTTL)
	default:
		// Minted at its delivery time, it sorts there in the feed.
		delivered, idTime = at, at
	}
	newID := ib.newID
	if !d.DeliverAt.IsZero() {
		newID = newScheduledID
	}
	id, err := newID(idTime)
	if err != nil {
		return Message{}, Config{}, err
	}
	expires := delivered.Add(ttl)
	msg := driver.Message{
		ID:           id,
		HostSystemID: d.HostSystemID,
		Sender:       d.Sender,
		Audience:     aud,
		Category:     d.Category,
		Thread:       d.Thread,
		Title:        d.Title,
		Body:         d.Body,
		CTAURI:       d.CTAURI,
		ReceivedAt:   received,
		DeliveredAt:  delivered,
		ExpiresAt:    expires,
	}
	if !d.DeliverAt.IsZero() {
		msg.DeliverAt = at
	}
	if d.Aggregate != "" {
		// Alone in its item, until the write joins it (putAggregated).
		msg.Thread, msg.Count = d.Aggregate, 1
		if d.Sender != "" {
			msg.Senders = []string{d.Sender}
		}
	}
	if err := fits(s, msg); err != nil {
		return Message{}, Config{}, err
	}
	if d.HostSystemID != "" {
		// The claim lives as long as the message, and every copy made under
		// it shares its ID and expiry; a retry after that is a new message.
		claim := driver.HostClaim{Scope: s, HostSystemID: d.HostSystemID, ID: id, ExpiresAt: expires, Digest: digest(d, aud), Now: now}
		if aud.Kind == driver.AudienceEveryone {
			claim.Group = driver.PublicGroup
		} else {
			claim.Group = aud.Group
		}
		got, err := ib.store.ClaimHostID(ctx, claim)
		if err != nil {
			return Message{}, Config{}, err
		}
		if got.Digest == driver.RetiredDigest {
			return Message{}, Config{}, fmt.Errorf("%w: host system id %q names a message that was redacted", ErrConflict, d.HostSystemID)
		}
		if got.Digest != "" && got.Digest != claim.Digest {
			return Message{}, Config{}, fmt.Errorf("%w: host system id %q was used for a message with other content or audience", ErrConflict, d.HostSystemID)
		}
		msg.ID, msg.ExpiresAt = got.ID, got.ExpiresAt
	}
	return msg, cfg, nil
}

// fits reports whether every copy of msg in scope s fits in an item
// (ValidateRecord): it checks the largest one, in the partition of a user
// with the longest key (or the shared partition, for a broadcast).
func fits(s Scope, msg Message) error {
	p := s.Public()
	switch msg.Audience.Kind {
	case AudienceUsers:
		p = s.User(strings.Repeat("u", MaxKeyLen)).Partition()
		msg.Audience.UIDs = []string{p.User}
	case AudienceGroup:
		p = s.Group(msg.Audience.Group)
	}
	return driver.ValidateRecord(newRecord(p, msg))
}

// digest identifies what a host system ID stands for: the audience (its
// kind and label, not the recipients, so that a retry may name fewer) and
// the content. d's body is normalized, so equal bodies encode alike
// (encoding/json sorts map keys). The thread, when set, is part of the
// content (appended, so that the digests of drafts without one are those
// claims made before threads hold).
func digest(d Draft, aud Audience) string {
	fields := []any{"v1", aud.Kind, aud.Group, aud.Label, d.Sender, d.Category, d.Title, d.Body, d.CTAURI}
	if d.Thread != "" {
		fields = append(fields, d.Thread)
	}
	if !d.DeliverAt.IsZero() {
		fields = append(fields, "deliverat", d.DeliverAt.Unix())
	}
	if d.Aggregate != "" {
		fields = append(fields, "aggregate", d.Aggregate, d.AggregateWindow, d.AggregateMax)
	}
	raw, _ := json.Marshal(fields)
	sum := sha256.Sum256(raw)
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// each calls f(0..n-1), at most ib.concurrency at a time, and waits.
func (ib *Inbox) each(n int, f func(i int)) {
	sem := make(chan struct{}, ib.concurrency)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			f(i)
		}()
	}
	wg.Wait()
}

// standingClaim reports whether d's host system ID has a standing claim
// for d's content and audience: d retries a publish that was accepted.
// A failed read of the claim is its error, not a refusal of d: the
// caller cannot tell a retry from bad input without it.
func (ib *Inbox) standingClaim(ctx context.Context, s Scope, d Draft, aud Audience, now time.Time) (bool, error) {
	if d.HostSystemID == "" {
		return false, nil
	}
	c, err := ib.store.ClaimHostID(ctx, driver.HostClaim{Scope: s, HostSystemID: d.HostSystemID, Now: now, Peek: true})
	if err != nil {
		return false, fmt.Errorf("inbox: reading the claim of host system id %q: %w", d.HostSystemID, err)
	}
	return c.ID != "" && c.Digest == digest(d, aud), nil
}
