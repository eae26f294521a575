package driver

import (
	"fmt"
	"slices"
	"strings"
)

// Preferences are a user's preferences in one inbox, kept in the user's
// partition: Stats returns them with every read of the partition's stats,
// and a preferences mark (Mark.Preferences) replaces them.
type Preferences struct {
	// MutedGroups are the groups the user muted: their messages stay in
	// the user's feed, marked muted, but leave the unread and unseen
	// counts (see inbox.Inbox.SetPreferences). In a Store they are sorted,
	// each once, at most MaxMutedGroups group keys, never PublicGroup.
	MutedGroups []string
	// MutedCategories are the categories the user muted: their messages
	// stay in the user's feed, marked muted, but leave the unread and
	// unseen counts. In a Store they are sorted, each once, at most
	// MaxMutedCategories category keys.
	MutedCategories []string
	// OptedOut are the categories the user opted out of: their messages
	// leave the user's feed and counts, and a user's copy of a new one is
	// not stored (PutMessage returns ErrOptedOut). In a Store they are
	// sorted, each once, at most MaxOptedOut category keys, none of them
	// muted as well.
	OptedOut []string
	// MutedThreads are the threads of her direct messages (her own
	// partition's, Message.Thread: a one-to-one chat) the user muted:
	// their messages stay in her feed, marked muted, but leave the unread
	// and unseen counts, which her partition keeps for each while it is
	// muted (see Counter.Muted). In a Store they are sorted, each once, at
	// most MaxMutedThreads thread keys. Defaults never hold any: a thread
	// is one user's.
	MutedThreads []string
	// Own reports that these are the user's own preferences, which she
	// set (inbox.Inbox.SetPreferences), even to none: a user without
	// preferences of her own follows the defaults of her inbox, else of
	// her tenant (InboxConfig.Preferences, TenantSettings.Preferences).
	// A Store keeps it (on DynamoDB, as the presence of c#*'s muted
	// attribute, "" for none muted); it is not part of Encode.
	Own bool
}

// MaxOptedOut is the most categories a user can opt out of: they are
// read with the muted groups, so they stay as small.
const MaxOptedOut = 50

// MaxMutedCategories is the most categories a user can mute: they are
// read with the muted groups, so they stay as small.
const MaxMutedCategories = 50

// MaxMutedThreads is the most threads of her direct messages a user can
// mute: her partition keeps four counts for each muted thread and
// category of its messages (on DynamoDB, on her c#* item, read by every
// Stats), so they stay few.
const MaxMutedThreads = 20

// MaxMutedGroups is the most groups a user can mute. Every Stats of the
// user's partition reads them (on DynamoDB, from the partition's c#*
// item), so they stay small: at most 50 keys of MaxKeyLen bytes, 6.4 KB.
const MaxMutedGroups = 50

// PreferencesSK is the sort key of the item the dynamo Store writes with
// every change of a user's preferences, in the user's partition, for the
// table's stream (kind UP): the preferences themselves live on c#*.
const PreferencesSK = "p#preferences"

// PositionPrefix begins the sort key of the item the dynamo Store writes
// with every move of a user's read position in a thread (Mark.Cover), in
// the user's partition, for the table's stream (kind RP), and deletes
// when the position is dropped: the position itself lives on c#*.
const PositionPrefix = "rp#"

// PositionSK returns the sort key of the read position item of thread t
// (see PositionPrefix): rp#<thread>.
func PositionSK(t string) string { return PositionPrefix + t }

// GroupPositionSK returns the sort key of the read position item of thread
// t of group g's messages: rp#<thread>#<group> (a thread holds no '#').
func GroupPositionSK(t, g string) string { return PositionPrefix + t + "#" + g }

// Mutes reports whether p mutes group g.
func (p Preferences) Mutes(g string) bool {
	_, ok := slices.BinarySearch(p.MutedGroups, g)
	return ok
}

// MutesCategory reports whether p mutes category c ("" never is).
func (p Preferences) MutesCategory(c string) bool {
	_, ok := slices.BinarySearch(p.MutedCategories, c)
	return ok && c != ""
}

// MutesThread reports whether p mutes thread t of the user's direct
// messages ("" never is).
func (p Preferences) MutesThread(t string) bool {
	_, ok := slices.BinarySearch(p.MutedThreads, t)
	return ok && t != ""
}

// Keeps reports whether a Store keeps counter c under preferences p (a
// partition's own, as stored): every counter but a muted thread's
// (Counter.Muted), which is kept only while p, the user's own, mutes its
// thread.
func (p Preferences) Keeps(c Counter) bool { return !c.Muted || p.Own && p.MutesThread(c.Thread) }

// OptsOut reports whether p opts out of category c ("" never is).
func (p Preferences) OptsOut(c string) bool {
	_, ok := slices.BinarySearch(p.OptedOut, c)
	return ok && c != ""
}

// Equal reports whether p and o hold the same preferences, Own included
// (a nil and an empty list alike).
func (p Preferences) Equal(o Preferences) bool {
	return p.Own == o.Own && p.sameKeys(o)
}

// sameKeys reports whether p and o mute and opt out of the same keys.
func (p Preferences) sameKeys(o Preferences) bool {
	return slices.Equal(p.MutedGroups, o.MutedGroups) && slices.Equal(p.MutedCategories, o.MutedCategories) && slices.Equal(p.OptedOut, o.OptedOut) &&
		slices.Equal(p.MutedThreads, o.MutedThreads)
}

// IsZero reports whether p sets nothing, and is not a user's own.
func (p Preferences) IsZero() bool { return !p.Own && p.None() }

// None reports whether p mutes nothing and opts out of nothing.
func (p Preferences) None() bool {
	return len(p.MutedGroups) == 0 && len(p.MutedCategories) == 0 && len(p.OptedOut) == 0 && len(p.MutedThreads) == 0
}

// Clone returns p with nothing shared with it.
func (p Preferences) Clone() Preferences {
	return Preferences{MutedGroups: slices.Clone(p.MutedGroups), MutedCategories: slices.Clone(p.MutedCategories), OptedOut: slices.Clone(p.OptedOut),
		MutedThreads: slices.Clone(p.MutedThreads), Own: p.Own}
}

// InEffect returns the preferences that apply to a user whose own are p:
// p if they are hers (Own), else the defaults of cfg (see
// Config.DefaultPreferences).
func (p Preferences) InEffect(cfg Config) Preferences {
	if p.Own {
		return p
	}
	return cfg.DefaultPreferences()
}

// ValidatePreferences checks preferences as a Store keeps them: at most
// MaxMutedGroups muted groups, each a group key other than PublicGroup
// (else ErrInvalidKey), sorted, each once; at most MaxMutedCategories
// muted categories, each a key (else ErrInvalidKey), sorted, each once;
// at most MaxOptedOut categories opted out of, alike, none of them muted;
// at most MaxMutedThreads muted threads, each a key, sorted, each once.
// Anything else is ErrInvalidInput.
func ValidatePreferences(p Preferences) error {
	for _, cats := range []struct {
		what, key string
		keys      []string
		max       int
	}{{"muted categories", "category", p.MutedCategories, MaxMutedCategories}, {"categories opted out of", "category", p.OptedOut, MaxOptedOut},
		{"muted threads", "muted thread", p.MutedThreads, MaxMutedThreads}} {
		if n := len(cats.keys); n > cats.max {
			return fmt.Errorf("%w: %d %s, at most %d", ErrInvalidInput, n, cats.what, cats.max)
		}
		for i, c := range cats.keys {
			if err := ValidateKey(cats.key, c); err != nil {
				return err
			}
			if i > 0 && cats.keys[i-1] >= c {
				return fmt.Errorf("%w: %s %q, %q not sorted, or repeated", ErrInvalidInput, cats.what, cats.keys[i-1], c)
			}
		}
	}
	for _, c := range p.OptedOut {
		if p.MutesCategory(c) {
			return fmt.Errorf("%w: category %q both muted and opted out of", ErrInvalidInput, c)
		}
	}
	if n := len(p.MutedGroups); n > MaxMutedGroups {
		return fmt.Errorf("%w: %d muted groups, at most %d", ErrInvalidInput, n, MaxMutedGroups)
	}
	for i, g := range p.MutedGroups {
		if err := ValidateKey("muted group", g); err != nil {
			return err
		}
		if g == PublicGroup {
			return fmt.Errorf("%w: muted group %q: everyone's messages cannot be muted", ErrInvalidKey, g)
		}
		if i > 0 && p.MutedGroups[i-1] >= g {
			return fmt.Errorf("%w: muted groups %q, %q not sorted, or repeated", ErrInvalidInput, p.MutedGroups[i-1], g)
		}
	}
	return nil
}

// ValidateRepairPreferences checks r.Preferences, of a Repair of
// partition p, as every Store must before it writes: valid preferences
// (ValidatePreferences), the user's own if they hold any key, none for a
// shared partition. Anything else is
// ErrInvalidInput.
func ValidateRepairPreferences(p Partition, r Repair) error {
	err := ValidatePreferences(r.Preferences)
	if err == nil && p.IsShared() && !r.Preferences.IsZero() {
		err = fmt.Errorf("%w: preferences of a shared partition", ErrInvalidInput)
	}
	if err == nil && !r.Preferences.Own && !r.Preferences.None() {
		err = fmt.Errorf("%w: preferences that are not the user's own", ErrInvalidInput)
	}
	if err != nil {
		return fmt.Errorf("%w: preferences reset in %s: %v", ErrInvalidInput, p.PK(), err)
	}
	return nil
}

// Normal returns p as a Store keeps it, its muted groups, categories and
// threads and the categories opted out of sorted (nil for none), Own as
// p's, after checking them as inbox.Inbox.SetPreferences takes them: in
// any order, each once (else ErrInvalidInput), at most MaxMutedGroups
// groups, MaxMutedCategories muted categories, MaxOptedOut opted out of
// and MaxMutedThreads threads (else ErrInvalidInput), no category both
// muted and opted out of (else ErrInvalidInput), keys (else
// ErrInvalidKey), the groups other than PublicGroup (else ErrInvalidKey).
func (p Preferences) Normal() (Preferences, error) {
	if n := len(p.MutedGroups); n > MaxMutedGroups {
		return Preferences{}, fmt.Errorf("%w: %d muted groups, at most %d", ErrInvalidInput, n, MaxMutedGroups)
	}
	if n := len(p.MutedCategories); n > MaxMutedCategories {
		return Preferences{}, fmt.Errorf("%w: %d muted categories, at most %d", ErrInvalidInput, n, MaxMutedCategories)
	}
	if n := len(p.OptedOut); n > MaxOptedOut {
		return Preferences{}, fmt.Errorf("%w: %d categories opted out of, at most %d", ErrInvalidInput, n, MaxOptedOut)
	}
	if n := len(p.MutedThreads); n > MaxMutedThreads {
		return Preferences{}, fmt.Errorf("%w: %d muted threads, at most %d", ErrInvalidInput, n, MaxMutedThreads)
	}
	sorted := func(what, how string, keys []string) ([]string, error) {
		keys = slices.Clone(keys)
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 && keys[i-1] == k {
				return nil, fmt.Errorf("%w: %s %q %s twice", ErrInvalidInput, what, k, how)
			}
		}
		if len(keys) == 0 {
			return nil, nil
		}
		return keys, nil
	}
	groups, err := sorted("group", "muted", p.MutedGroups)
	if err != nil {
		return Preferences{}, err
	}
	cats, err := sorted("category", "muted", p.MutedCategories)
	if err != nil {
		return Preferences{}, err
	}
	out, err := sorted("category", "opted out of", p.OptedOut)
	if err != nil {
		return Preferences{}, err
	}
	threads, err := sorted("thread", "muted", p.MutedThreads)
	if err != nil {
		return Preferences{}, err
	}
	p = Preferences{MutedGroups: groups, MutedCategories: cats, OptedOut: out, MutedThreads: threads, Own: p.Own}
	if err := ValidatePreferences(p); err != nil {
		return Preferences{}, err
	}
	return p, nil
}

// PreferencesChange is what a preferences mark changes: a user's
// preferences, from From (as stored) to To.
// A change that mutes threads anew (NewlyMuted) comes with their counters,
// as the partition's records stood at a counter version (Mark.Versioned,
// Mark.Muted): it writes them, and applies only if the version is still
// that one (else ErrStateChanged), so that no write of the threads'
// records came between. The counters of a thread To no longer mutes go in
// the same unit.
type PreferencesChange struct {
	From, To Preferences
}

// NewlyMuted returns the threads ch.To mutes and ch.From does not.
func (ch PreferencesChange) NewlyMuted() []string {
	var out []string
	for _, t := range ch.To.MutedThreads {
		if !ch.From.MutesThread(t) {
			out = append(out, t)
		}
	}
	return out
}

// Encode returns p as one string: its muted groups, then its muted
// categories each after a '?', then the categories opted out of each
// between two '*' (OptOutToken), then its muted threads (MutedThreadToken),
// all separated by '#' (no key holds any of them): how the dynamo Store
// keeps preferences, so that a condition compares them as one value, and
// finds an opt-out or a thread's mute as a substring. "" is none.
func (p Preferences) Encode() string {
	parts := slices.Clone(p.MutedGroups)
	for _, c := range p.MutedCategories {
		parts = append(parts, "?"+c)
	}
	for _, c := range p.OptedOut {
		parts = append(parts, OptOutToken(c))
	}
	for _, t := range p.MutedThreads {
		parts = append(parts, MutedThreadToken(t))
	}
	return strings.Join(parts, "#")
}

// OptOutToken returns how Encode writes an opt-out of category c:
// "*c*". Since no key holds a '*', '#' or '?', the token is a substring
// of an encoding exactly when that encoding opts out of c.
func OptOutToken(c string) string { return "*" + c + "*" }

// MutedThreadToken returns how Encode writes a mute of thread t: "??t?".
// Since no key holds a '*', '#' or '?', and only a thread's token holds
// "??", the token is a substring of an encoding exactly when that
// encoding mutes t.
func MutedThreadToken(t string) string { return "??" + t + "?" }

// DecodePreferences is Encode's inverse; what Encode cannot return is
// ErrInvalidInput.
func DecodePreferences(s string) (Preferences, error) {
	var p Preferences
	if s == "" {
		return p, nil
	}
	for _, part := range strings.Split(s, "#") {
		if t, ok := strings.CutPrefix(part, "??"); ok {
			p.MutedThreads = append(p.MutedThreads, strings.TrimSuffix(t, "?"))
		} else if c, ok := strings.CutPrefix(part, "*"); ok {
			p.OptedOut = append(p.OptedOut, strings.TrimSuffix(c, "*"))
		} else if c, ok := strings.CutPrefix(part, "?"); ok {
			p.MutedCategories = append(p.MutedCategories, c)
		} else {
			p.MutedGroups = append(p.MutedGroups, part)
		}
	}
	// Valid keys, in order, and Encode's one form: the kinds in Encode's
	// order, each token closed.
	if err := ValidatePreferences(p); err != nil {
		return Preferences{}, fmt.Errorf("%w: preferences %q: %v", ErrInvalidInput, s, err)
	}
	if p.Encode() != s {
		return Preferences{}, fmt.Errorf("%w: preferences %q not in their one form", ErrInvalidInput, s)
	}
	return p, nil
}

// ValidateMarks checks what marks and deltas may ask of one Store.Mark,
// whatever is stored, as every Store must before it writes: each mark
// valid (ValidateMark), a preferences mark alone in its call, without
// deltas, no delta of a thread a mark's MutedReset sets anew, no receipt
// of a broadcast that a mark of the call writes (its fold: the
// transaction would check and write one item, which DynamoDB refuses),
// and a DynamoDB transaction of at most MaxTransactItems items
// (MarkItems). Anything else is ErrInvalidInput.
func ValidateMarks(marks []Mark, deltas []Counter) error {
	for _, mk := range marks {
		if err := ValidateMark(mk); err != nil {
			return err
		}
		if mk.Preferences != nil && (len(marks) > 1 || len(deltas) > 0) {
			return fmt.Errorf("%w: a preferences mark of %s with other marks or deltas", ErrInvalidInput, mk.Key.Partition.PK())
		}
		if mk.Muted == nil {
			continue
		}
		for _, d := range deltas {
			if d.Muted && d.Partition == mk.Key.Partition && slices.Contains(mk.Muted.Threads, d.Thread) {
				return fmt.Errorf("%w: a delta of muted thread %q of %s, which a mark sets anew", ErrInvalidInput, d.Thread, d.Partition.PK())
			}
		}
	}
	covers := map[Key]*CoverChange{}
	versioned := map[Partition]bool{}
	for _, mk := range marks {
		if mk.Versioned && mk.Seen != "" {
			versioned[mk.Key.Partition] = true
		}
		if mk.Cover != nil {
			k := Key{Partition: mk.Key.Partition, ID: mk.Cover.Thread}
			if covers[k] != nil {
				return fmt.Errorf("%w: two cover marks of thread %q of %s", ErrInvalidInput, k.ID, k.Partition.PK())
			}
			covers[k] = mk.Cover
		}
	}
	for _, d := range deltas {
		if !d.Covered || d.Of != "" {
			continue
		}
		if c := covers[Key{Partition: d.Partition, ID: d.Thread}]; c == nil && !versioned[d.Partition] {
			return fmt.Errorf("%w: a change of the covered counters of thread %q of %s without a cover mark of its position, or a versioned watermark mark", ErrInvalidInput, d.Thread, d.Partition.PK())
		}
	}
	keys := make(map[Key]bool, len(marks))
	for _, mk := range marks {
		keys[mk.Key] = true
	}
	for _, mk := range marks {
		if shared := (Key{Partition: mk.Shared, ID: mk.Key.ID}); mk.Receipt && keys[shared] {
			return fmt.Errorf("%w: a receipt of %q in %s with a mark of that broadcast", ErrInvalidInput, mk.Key.ID, mk.Shared.PK())
		}
	}
	return validateMarkItems(marks, deltas)
}
