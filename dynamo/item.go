package dynamo

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stak/inbox/driver"
)

// Item kinds, the kind attribute of each record type.
const (
	kindMessage   = "UM" // message, broadcast or read receipt
	kindCounter   = "US" // stats
	kindTenant    = "TS" // tenant settings
	kindInbox     = "IC" // inbox config
	kindClaim     = "HC" // host-system-ID claim
	kindRemoval   = "RX" // applied-removal marker
	kindLedger    = "LE" // ledger entry
	kindTombstone = "TB" // tombstone of a broadcast removed before it expired
	kindSeen      = "SN" // a user's seen watermark
	kindSnooze    = "SZ" // snooze entry of a snoozed record
	kindPending   = "SQ" // pending entry of a scheduled record
	kindTimer     = "TM" // a timed entry's timer: DynamoDB's TTL deletes it at the entry's time
	kindBucket    = "UB" // a shared partition's time bucket (a day's or an hour's)
	kindPrefs     = "UP" // a user's preferences, as last set, for the stream (they live on c#*)
	attrTimed     = driver.TimedAttribute
	attrSnoozed   = "snoozeduntil"
	attrInteract  = "interactedat"
	attrHeaders   = "headers"
	attrAudiences = "audiences" // seed 000 keeps it at the top level
	attrReadAt    = "readat"
	attrArchived  = "archivedat"
	attrDeleted   = "deletedat"
	attrDeliverAt = "deliverat"
	attrCategory  = "taxonomy.category"
	attrVersion   = "ver"
	attrRecounted = "recounted"
	attrLatest    = "latest" // a thread counter's driver.Counter.Latest
	attrUnread    = "unread" // the unread index's key: see unreadKey
	attrThread    = "thread"
	attrTSK       = "tsk" // the thread index's key: see threadKey
	attrSPK       = "spk" // the scheduled index's partition key: driver.ScheduledPK
	attrSSK       = "ssk" // the scheduled index's sort key: driver.ScheduledKey
	attrGroup     = "group"
)

// messageItem is a message, broadcast or receipt item without its key and
// TTL attributes. A receipt has no headers and no message. Its times are
// written from it, and read apart from it (see decodeRecord), whatever
// another program put there.
type messageItem struct {
	Kind      string         `dynamodbav:"kind"`
	Headers   *headersAttr   `dynamodbav:"headers,omitempty"`
	Message   *messageAttr   `dynamodbav:"message,omitempty"`
	Taxonomy  *taxonomyAttr  `dynamodbav:"taxonomy,omitempty"`
	ReadAt    *int64         `dynamodbav:"readat,omitempty"`
	Archived  *int64         `dynamodbav:"archivedat,omitempty"`
	Deleted   *int64         `dynamodbav:"deletedat,omitempty"` // a receipt's
	Ledger    string         `dynamodbav:"ledger,omitempty"`
	Counted   uint8          `dynamodbav:"counted,omitempty"` // driver.Record.Counted: the marks the ledger entry counts (decodeRecord reads it apart)
	Group     string         `dynamodbav:"group,omitempty"`   // a receipt's: its broadcast's group
	Unread    string         `dynamodbav:"unread,omitempty"`  // see unreadKey
	Thread    string         `dynamodbav:"thread,omitempty"`
	DeliverAt *int64         `dynamodbav:"deliverat,omitempty"`    // a scheduled message's due time
	Snoozed   *int64         `dynamodbav:"snoozeduntil,omitempty"` // the user's snooze (driver.State.SnoozedUntil)
	Interact  *int64         `dynamodbav:"interactedat,omitempty"` // driver.State.InteractedAt
	TSK       string         `dynamodbav:"tsk,omitempty"`          // the thread index's key: see threadKey
	TenantKey string         `dynamodbav:"tenant_key"`
	InboxKey  string         `dynamodbav:"inbox_key"`
	UID       string         `dynamodbav:"uid"`
	SPK       string         `dynamodbav:"spk,omitempty"` // a scheduled message's: see scheduledKeys
	SSK       string         `dynamodbav:"ssk,omitempty"`
	Timed     string         `dynamodbav:"timed,omitempty"`     // driver.Record.Timed
	Aggregate *aggregateAttr `dynamodbav:"aggregate,omitempty"` // an aggregated message's (decodeRecord reads it apart)
}

// aggregateAttr holds an aggregated message's item fields
// (driver.Message.Count, Senders, Members).
type aggregateAttr struct {
	N int      `dynamodbav:"n"`
	S []string `dynamodbav:"s,omitempty"`
	M []string `dynamodbav:"m,omitempty"`
	F string   `dynamodbav:"f,omitempty"`
}

// aggregateOf returns the aggregate attribute of rec, nil for a message
// that is not aggregated.
func aggregateOf(m driver.Message) *aggregateAttr {
	if m.Count == 0 {
		return nil
	}
	return &aggregateAttr{N: m.Count, S: m.Senders, M: m.Members, F: m.First}
}

// aggregateRead returns av, an item's aggregate attribute, as read for
// driver.WithAggregate: a map of a number n, lists of strings s and m and
// a string f, as the library writes it, each but n optional; anything
// else (another type, a NULL, a set) is not Shaped.
func aggregateRead(av types.AttributeValue) driver.AggregateRead {
	mv, ok := av.(*types.AttributeValueMemberM)
	if !ok {
		return driver.AggregateRead{}
	}
	n, ok := mv.Value["n"].(*types.AttributeValueMemberN)
	if !ok {
		return driver.AggregateRead{}
	}
	a := driver.AggregateRead{N: n.Value, Shaped: true}
	strs := func(name string) []string {
		v, present := mv.Value[name]
		if !present {
			return nil
		}
		l, ok := v.(*types.AttributeValueMemberL)
		if !ok {
			a.Shaped = false
			return nil
		}
		out := make([]string, 0, len(l.Value))
		for _, e := range l.Value {
			s, ok := e.(*types.AttributeValueMemberS)
			if !ok {
				a.Shaped = false
				return nil
			}
			out = append(out, s.Value)
		}
		return out
	}
	a.Senders, a.Members = strs("s"), strs("m")
	if f, present := mv.Value["f"]; present {
		s, ok := f.(*types.AttributeValueMemberS)
		a.First, a.Shaped = s.Value, a.Shaped && ok
		if !ok {
			a.First = ""
		}
	}
	return a
}

// flatItem holds what seed 000 puts at the top level of a message item
// (seed 001, and this Store, nest it under headers), but the times, which
// decodeRecord reads apart.
type flatItem struct {
	ID           string         `dynamodbav:"id"`
	HostSystemID string         `dynamodbav:"host_system_id"`
	Sender       string         `dynamodbav:"sender"`
	Audiences    *audiencesAttr `dynamodbav:"audiences"`
}

// ledgerItem is a ledger entry without its key: what its record adds to
// the counters. It has no TTL attribute, so that DynamoDB never deletes it:
// only the accounting of its record's removal does.
type ledgerItem struct {
	Kind     string        `dynamodbav:"kind"`
	Receipt  bool          `dynamodbav:"receipt,omitempty"`
	Taxonomy *taxonomyAttr `dynamodbav:"taxonomy,omitempty"`
	ReadAt   *int64        `dynamodbav:"readat,omitempty"`
	Archived *int64        `dynamodbav:"archivedat,omitempty"`
	Deleted  *int64        `dynamodbav:"deletedat,omitempty"`
	Group    string        `dynamodbav:"group,omitempty"`
	Thread   string        `dynamodbav:"thread,omitempty"`
}

// seenItem is a user's seen watermark (sort key cs#seen) without its key.
type seenItem struct {
	Kind      string `dynamodbav:"kind"`
	Seen      string `dynamodbav:"seen"`
	TenantKey string `dynamodbav:"tenant_key"`
	InboxKey  string `dynamodbav:"inbox_key"`
	UID       string `dynamodbav:"uid"`
}

// tombstoneItem is the tombstone of a broadcast removed before it expired,
// without its key and TTL attribute (the broadcast's expiry).
type tombstoneItem struct {
	Kind     string        `dynamodbav:"kind"`
	Taxonomy *taxonomyAttr `dynamodbav:"taxonomy,omitempty"`
	Thread   string        `dynamodbav:"thread,omitempty"`
}

type headersAttr struct {
	ID           string        `dynamodbav:"id"`
	HostSystemID string        `dynamodbav:"host_system_id,nullempty"`
	Sender       string        `dynamodbav:"sender"`
	Audiences    audiencesAttr `dynamodbav:"audiences"`
	Received     int64         `dynamodbav:"received"`
	Delivered    int64         `dynamodbav:"delivered"`
}

type audiencesAttr struct {
	Kind  string   `dynamodbav:"kind"`
	Label string   `dynamodbav:"label"`
	UIDs  []string `dynamodbav:"uids,omitempty"`
	Group string   `dynamodbav:"group,omitempty"`
}

type messageAttr struct {
	Title  string `dynamodbav:"title"`
	Body   any    `dynamodbav:"body"`
	CTAURI string `dynamodbav:"cta_uri,nullempty"`
}

type taxonomyAttr struct {
	Category string `dynamodbav:"category"`
}

// counterItem is a stats item without its key attributes. Ver is the
// partition's counter version, kept on the c#* item only.
type counterItem struct {
	Kind         string `dynamodbav:"kind"`
	Published    int64  `dynamodbav:"published"`
	Read         int64  `dynamodbav:"read"`
	Archived     int64  `dynamodbav:"archived,omitempty"`
	ArchivedRead int64  `dynamodbav:"archivedread,omitempty"`
	Hidden       int64  `dynamodbav:"hidden,omitempty"`
	Ver          int64  `dynamodbav:"ver,omitempty"`
	// Above, and the tallies of the partition's timed entries (see
	// driver.Counter): z for the snoozed, q for the pending.
	Above int64 `dynamodbav:"above,omitempty"`
	ZP    int64 `dynamodbav:"zp,omitempty"`
	ZR    int64 `dynamodbav:"zr,omitempty"`
	ZA    int64 `dynamodbav:"za,omitempty"`
	ZAR   int64 `dynamodbav:"zar,omitempty"`
	ZH    int64 `dynamodbav:"zh,omitempty"`
	QP    int64 `dynamodbav:"qp,omitempty"`
	QR    int64 `dynamodbav:"qr,omitempty"`
	QA    int64 `dynamodbav:"qa,omitempty"`
	QAR   int64 `dynamodbav:"qar,omitempty"`
	QH    int64 `dynamodbav:"qh,omitempty"`
	// Latest is a thread counter's driver.Counter.Latest, and Top a
	// user's counter's of her receipts of a shared thread (see attrTop).
	Latest string     `dynamodbav:"latest,omitempty"`
	Top    *hintMarks `dynamodbav:"top,omitempty"`
	// Recounted is c#*'s driver.Stats.Recounted, in Unix seconds.
	Recounted int64  `dynamodbav:"recounted,omitempty"`
	TenantKey string `dynamodbav:"tenant_key"`
	InboxKey  string `dynamodbav:"inbox_key"`
	UID       string `dynamodbav:"uid"`
	// Recent are the recent receipts of a user's c#* (driver.Stats.Recent),
	// by slot: string sets of "<group>#<message id>".
	Recent0 []string `dynamodbav:"rs0,omitempty,stringset"`
	Recent1 []string `dynamodbav:"rs1,omitempty,stringset"`
	Recent2 []string `dynamodbav:"rs2,omitempty,stringset"`
	Recent3 []string `dynamodbav:"rs3,omitempty,stringset"`
	// A user's c#* also holds her preferences (attrMuted), read by
	// decodePrefs: not a field, so that another program's value of
	// another type is a typed error, not one of the decoding.
}

// prefsItem is a user's preferences item (driver.PreferencesSK), which
// each change of the preferences writes with c#*, so that the table's
// stream carries the change: the preferences as on c#*.
type prefsItem struct {
	Kind string `dynamodbav:"kind"`
	// Muted is absent for a user who follows the defaults, "" for one
	// whose own preferences mute nothing.
	Muted     *string `dynamodbav:"muted,omitempty"`
	TenantKey string  `dynamodbav:"tenant_key"`
	InboxKey  string  `dynamodbav:"inbox_key"`
	UID       string  `dynamodbav:"uid"`
}

// recentAttr is the name of slot i of a user's recent receipts on c#*.
func recentAttr(i int) string { return "rs" + strconv.Itoa(i) }

// recentValue is a recent receipt as a c#* string set holds it.
func recentValue(k driver.Key) string { return k.Partition.Group + "#" + k.ID }

// recentKeys decodes the recent receipts of user partition p from it's
// slots, leaving out any value that is not a group and a message ID: such
// a value was not written by a Store, and the keys only ever make an Inbox
// read more.
func (it counterItem) recentKeys(p driver.Partition) []driver.Key {
	var out []driver.Key
	for _, slot := range [][]string{it.Recent0, it.Recent1, it.Recent2, it.Recent3} {
		for _, v := range slot {
			g, id, ok := strings.Cut(v, "#")
			if !ok || driver.ValidateMessageID(id) != nil || g != driver.PublicGroup && driver.ValidateKey("group", g) != nil {
				continue
			}
			out = append(out, driver.Key{Partition: driver.Partition{Tenant: p.Tenant, Inbox: p.Inbox, Group: g}, ID: id})
		}
	}
	return out
}

// stringSet marshals as a DynamoDB string set (SS), for an ADD to one.
type stringSet []string

// MarshalDynamoDBAttributeValue implements attributevalue.Marshaler.
func (ss stringSet) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) {
	return &types.AttributeValueMemberSS{Value: ss}, nil
}

type tenantItem struct {
	Kind  string `dynamodbav:"kind"`
	Title string `dynamodbav:"title"`
	TTL   string `dynamodbav:"ttl"`
	// Prefs are the default preferences (driver.Preferences.Encode).
	Prefs     string `dynamodbav:"prefs,omitempty"`
	TenantKey string `dynamodbav:"tenant_key"`
	UID       string `dynamodbav:"uid"`
}

type inboxConfigItem struct {
	Kind        string            `dynamodbav:"kind"`
	Title       string            `dynamodbav:"title"`
	Description string            `dynamodbav:"description"`
	TTL         map[string]string `dynamodbav:"ttl"`
	// Prefs are the default preferences (driver.Preferences.Encode).
	Prefs     string `dynamodbav:"prefs,omitempty"`
	TenantKey string `dynamodbav:"tenant_key"`
	InboxKey  string `dynamodbav:"inbox_key"`
	UID       string `dynamodbav:"uid"`
}

type claimItem struct {
	Kind      string `dynamodbav:"kind"`
	ID        string `dynamodbav:"id"`
	Group     string `dynamodbav:"group,omitempty"`
	Digest    string `dynamodbav:"digest,omitempty"`
	TenantKey string `dynamodbav:"tenant_key"`
	InboxKey  string `dynamodbav:"inbox_key"`
}

type removalItem struct {
	Kind string `dynamodbav:"kind"`
}

// epoch returns t in epoch seconds as a number.
func epoch(t time.Time) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.Unix(), 10)}
}

// fromEpoch returns epoch seconds as a time in UTC.
func fromEpoch(s int64) time.Time { return time.Unix(s, 0).UTC() }

// item marshals v (one of the item structs) and adds the key attributes,
// and the TTL attribute unless expires is zero.
func (s *Store) item(pk, sk string, v any, expires time.Time) (map[string]types.AttributeValue, error) {
	av, err := attributevalue.MarshalMap(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", driver.ErrInvalidInput, err)
	}
	av[s.o.pk] = &types.AttributeValueMemberS{Value: pk}
	av[s.o.sk] = &types.AttributeValueMemberS{Value: sk}
	if !expires.IsZero() {
		av[s.o.ttl] = epoch(expires)
	}
	return av, nil
}

// recordItem returns the item of a message or broadcast (never a receipt).
func (s *Store) recordItem(rec driver.Record) (map[string]types.AttributeValue, error) {
	m := rec.Message
	it := messageItem{
		Kind: kindMessage,
		Headers: &headersAttr{
			ID:           m.ID,
			HostSystemID: m.HostSystemID,
			Sender:       m.Sender,
			Audiences:    audiencesAttr{Kind: string(m.Audience.Kind), Label: m.Audience.Label, UIDs: m.Audience.UIDs, Group: m.Audience.Group},
			Received:     m.ReceivedAt.Unix(),
			Delivered:    m.DeliveredAt.Unix(),
		},
		Message:   &messageAttr{Title: m.Title, Body: m.Body, CTAURI: m.CTAURI},
		Taxonomy:  taxonomy(m.Category),
		ReadAt:    readAt(m.ReadAt),
		Archived:  readAt(m.ArchivedAt),
		Ledger:    rec.Entry,
		Counted:   uint8(driver.CountedOf(rec)),
		Unread:    unreadKey(rec.Partition, m.ID, rec.State()),
		Thread:    m.Thread,
		TSK:       threadKey(m.Thread, m.ID),
		DeliverAt: readAt(m.DeliverAt),
		Timed:     rec.Timed,
		Aggregate: aggregateOf(m),
	}
	it.TenantKey, it.InboxKey, it.UID = rec.Partition.Tenant, rec.Partition.Inbox, rec.Partition.User+rec.Partition.Group
	it.SPK, it.SSK = scheduledKeys(rec)
	return s.item(rec.Partition.PK(), driver.MessageSK(m.ID), it, m.ExpiresAt)
}

// The unread index (a local secondary index on attrUnread) holds, in a
// user's partition: each unread, unarchived direct message under its ID;
// each receipt under its ID and receiptMark (just above the ID, below the
// next one); and the c#* stats item under counterMark, above every ID.
// An unread page reads below feedBound and drops the receipts it passes
// (a filter cannot name the index's key, and the index projects nothing
// that tells a receipt from a message): it evaluates the unread messages
// and the receipts of the broadcasts between them, never a read message.
// An unseen read (driver.Query.Unseen) reads all three from the top, so
// that it gets the counter version with the records.
const (
	receiptMark = "r"
	counterMark = "~"
	// feedBound is above every ID and receipt key, below counterMark.
	feedBound = "}"
)

// unreadKey returns the unread index's key of direct message id of
// partition p with marks st: its ID while it is unread and not archived,
// in a user's partition; "" (no attribute, so not in the index) otherwise.
func unreadKey(p driver.Partition, id string, st driver.State) string {
	if p.IsShared() || !st.ReadAt.IsZero() || !st.ArchivedAt.IsZero() {
		return ""
	}
	return id
}

// threadKey returns the thread index's key of record id of thread t:
// driver.ThreadIndexKey, or "" (not in the index) without a thread.
func threadKey(t, id string) string {
	if t == "" {
		return ""
	}
	return driver.ThreadIndexKey(t, id)
}

// setUnread adds to upd the change of the unread index's key of direct
// message id of partition p to what marks st give it.
func setUnread(upd expression.UpdateBuilder, p driver.Partition, id string, st driver.State) expression.UpdateBuilder {
	if k := unreadKey(p, id, st); k != "" {
		return upd.Set(expression.Name(attrUnread), expression.Value(k))
	}
	return upd.Remove(expression.Name(attrUnread))
}

// receiptItem returns the receipt mark mk leaves, with mk.To's marks.
func (s *Store) receiptItem(mk driver.Mark) (map[string]types.AttributeValue, error) {
	it := messageItem{
		Kind:     kindMessage,
		Taxonomy: taxonomy(mk.Category),
		ReadAt:   readAt(mk.To.ReadAt),
		Archived: readAt(mk.To.ArchivedAt),
		Deleted:  readAt(mk.To.DeletedAt),
		Snoozed:  readAt(mk.To.SnoozedUntil),
		Interact: readAt(mk.To.InteractedAt),
		Ledger:   mk.Entry,
		Counted:  uint8(mk.To.Counted()),
		Group:    mk.EntryRecord().Message.Audience.Group,
		Unread:   mk.Key.ID + receiptMark,
		Thread:   mk.Thread,
		TSK:      threadKey(mk.Thread, mk.Key.ID),
		Timed:    timedAfter(mk),
	}
	it.TenantKey, it.InboxKey, it.UID = mk.Key.Partition.Tenant, mk.Key.Partition.Inbox, mk.Key.Partition.User
	return s.item(mk.Key.Partition.PK(), driver.MessageSK(mk.Key.ID), it, mk.ExpiresAt)
}

// ledgerEntry returns the ledger entry item rec.Entry of rec (its category,
// marks and receipt state; its key holds the record's expiry and ID).
func (s *Store) ledgerEntry(rec driver.Record) (map[string]types.AttributeValue, error) {
	m := rec.Message
	if err := driver.ValidateEntry(rec); err != nil || !rec.Ledgered() {
		return nil, fmt.Errorf("%w: ledger entry %q of record %s", driver.ErrInvalidInput, rec.Entry, m.ID)
	}
	it := ledgerItem{Kind: kindLedger, Receipt: rec.Receipt, Taxonomy: taxonomy(m.Category), ReadAt: readAt(m.ReadAt), Archived: readAt(m.ArchivedAt), Deleted: readAt(rec.DeletedAt), Thread: m.Thread}
	if rec.Receipt {
		it.Group = m.Audience.Group
	}
	return s.item(rec.Partition.PK(), rec.Entry, it, time.Time{})
}

// timedItem is a timed entry (a snooze or pending entry) without its key
// (which holds the time and the record's ID): its record as a ledger entry
// holds it. A snooze entry carries the unread index's key snoozeMark and
// its record's ID, so that the snoozed view reads the snooze entries alone
// (driver.Query.Snoozed). An earlier version's entries (under
// driver.SnoozeSK and PendingSK) have a TTL attribute; this version's
// stay until a mark or the record's removal deletes them.
type timedItem struct {
	ledgerItem
	Expires int64  `dynamodbav:"expires"` // the record's expiry
	Unread  string `dynamodbav:"unread,omitempty"`
}

// snoozeMark begins the unread index's key of a snooze entry: ~z<id>,
// above every ID, receipt key and counterMark.
const snoozeMark = "~z"

// timerItem is a timed entry's timer without its key (w#<the entry's
// key>) and TTL attribute (the entry's time).
type timerItem struct {
	Kind      string `dynamodbav:"kind"`
	TenantKey string `dynamodbav:"tenant_key"`
	InboxKey  string `dynamodbav:"inbox_key"`
	UID       string `dynamodbav:"uid"`
}

// timedAfter returns the Timed the record of mark mk notes after it.
func timedAfter(mk driver.Mark) string {
	puts, _ := mk.TimedWrites()
	for _, e := range puts {
		return driver.TimedKeyOf(e)
	}
	return ""
}

// timedItemOf returns the item of e, a timed entry as
// driver.Mark.TimedWrites returns it, at driver.TimedKeyOf(e), and the
// item of its timer.
func (s *Store) timedItemOf(e driver.Record) (entry, timer map[string]types.AttributeValue, err error) {
	m := e.Message
	sk := driver.TimedKeyOf(e)
	it := timedItem{ledgerItem: ledgerItem{Kind: kindSnooze, Receipt: e.Receipt, Taxonomy: taxonomy(m.Category), ReadAt: readAt(m.ReadAt), Archived: readAt(m.ArchivedAt), Thread: m.Thread}, Expires: m.ExpiresAt.Unix()}
	if !m.DeliverAt.IsZero() {
		it.Kind = kindPending
	} else {
		it.Unread = snoozeMark + m.ID
	}
	if e.Receipt {
		it.Group = m.Audience.Group
	}
	if entry, err = s.item(e.Partition.PK(), sk, it, time.Time{}); err != nil {
		return nil, nil, err
	}
	p := e.Partition
	timer, err = s.item(p.PK(), driver.TimerSK(sk), timerItem{Kind: kindTimer, TenantKey: p.Tenant, InboxKey: p.Inbox, UID: p.User + p.Group}, driver.TimedAt(e))
	return entry, timer, err
}

// decodeTimed returns the timed entry item av of partition p (this
// version's, under a driver.TimedKey, or an earlier version's) as a record
// with its SnoozedUntil or DeliverAt, and its ledger entry.
func (s *Store) decodeTimed(p driver.Partition, av map[string]types.AttributeValue) (driver.Record, error) {
	_, sk, err := s.itemKey(av)
	if err != nil {
		return driver.Record{}, err
	}
	var it timedItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return driver.Record{}, fmt.Errorf("dynamo: decode entry %s/%s: %w", p.PK(), sk, err)
	}
	var at time.Time
	var entry string
	pending := strings.HasPrefix(sk, driver.PendingPrefix)
	if driver.IsTimedKey(sk) {
		at, entry, pending, err = driver.ParseTimedKey(sk, fromEpoch(it.Expires))
	} else {
		at, entry, err = driver.ParseTimedSK(sk, fromEpoch(it.Expires))
	}
	if err != nil {
		return driver.Record{}, fmt.Errorf("dynamo: entry %s/%s: %w", p.PK(), sk, err)
	}
	_, id, _ := driver.ParseLedgerSK(entry)
	if err := driver.ValidateThread(it.Thread); err != nil {
		return driver.Record{}, fmt.Errorf("dynamo: entry %s/%s: %w", p.PK(), sk, err)
	}
	rec := driver.Record{Partition: p, Receipt: it.Receipt, Entry: entry, Message: driver.Message{ID: id, Thread: it.Thread, Audience: driver.Audience{Group: it.Group},
		ReadAt: fromEpochPtr(it.ReadAt), ArchivedAt: fromEpochPtr(it.Archived), ExpiresAt: fromEpoch(it.Expires)}}
	if pending {
		rec.Message.DeliverAt = at
	} else {
		rec.Message.SnoozedUntil = at
	}
	if it.Taxonomy != nil {
		rec.Message.Category = it.Taxonomy.Category
	}
	return rec, nil
}

// decodeEntry returns the ledger entry item av of partition p as a record.
func (s *Store) decodeEntry(p driver.Partition, av map[string]types.AttributeValue) (driver.Record, error) {
	_, sk, err := s.itemKey(av)
	if err != nil {
		return driver.Record{}, err
	}
	exp, id, err := driver.ParseLedgerSK(sk)
	if err != nil {
		return driver.Record{}, fmt.Errorf("dynamo: ledger entry %s/%s: %w", p.PK(), sk, err)
	}
	var it ledgerItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return driver.Record{}, fmt.Errorf("dynamo: decode ledger entry %s/%s: %w", p.PK(), sk, err)
	}
	rec := driver.Record{Partition: p, Receipt: it.Receipt, Entry: sk, Message: driver.Message{ID: id, ExpiresAt: exp}}
	if it.Taxonomy != nil {
		rec.Message.Category = it.Taxonomy.Category
	}
	rec.Message.ReadAt, rec.Message.ArchivedAt, rec.DeletedAt = fromEpochPtr(it.ReadAt), fromEpochPtr(it.Archived), fromEpochPtr(it.Deleted)
	rec.Message.Audience.Group = it.Group
	rec.Message.Thread = it.Thread
	if err := driver.ValidateThread(it.Thread); err != nil {
		return driver.Record{}, fmt.Errorf("dynamo: ledger entry %s/%s: %w", p.PK(), sk, err)
	}
	return rec, nil
}

// fromEpochPtr returns *s as a time, zero for nil.
func fromEpochPtr(s *int64) time.Time {
	if s == nil {
		return time.Time{}
	}
	return fromEpoch(*s)
}

// tombstone returns the tombstone item of rec, a removed broadcast: it
// expires when the broadcast would have.
func (s *Store) tombstone(rec driver.Record) (map[string]types.AttributeValue, error) {
	return s.item(rec.Partition.PK(), driver.TombstoneSK(rec.Message.ID), tombstoneItem{
		Kind: kindTombstone, Taxonomy: taxonomy(rec.Message.Category), Thread: rec.Message.Thread,
	}, rec.Message.ExpiresAt)
}

// decodeTombstone returns the tombstone item av of partition p as a record.
func (s *Store) decodeTombstone(p driver.Partition, av map[string]types.AttributeValue) (driver.Record, error) {
	_, sk, err := s.itemKey(av)
	if err != nil {
		return driver.Record{}, err
	}
	var it tombstoneItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return driver.Record{}, fmt.Errorf("dynamo: decode tombstone %s/%s: %w", p.PK(), sk, err)
	}
	rec := driver.Record{Partition: p, Message: driver.Message{ID: strings.TrimPrefix(sk, driver.TombstonePrefix), Thread: it.Thread, ExpiresAt: s.expiry(av)}}
	if it.Taxonomy != nil {
		rec.Message.Category = it.Taxonomy.Category
	}
	return rec, nil
}

// taxonomy returns the taxonomy of category, nil (omitted) for none.
func taxonomy(category string) *taxonomyAttr {
	if category == "" {
		return nil
	}
	return &taxonomyAttr{Category: category}
}

// readAt returns t in epoch seconds, nil (omitted) when zero.
func readAt(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	s := t.Unix()
	return &s
}

// isRecordItem reports whether av, an item at a message's key, is a
// record: of kind UM, as the seeds write messages, broadcasts and
// receipts, or with a ledger entry (driver.LedgerAttribute), which the
// counters count whatever another program did to its kind since. Another
// program's item of another kind, without one, is none: the stream
// handler accounts no removal of it (it reads kind UM images only, as the
// event source mapping's filters pass), so a Store that listed it, or let
// a mark adopt it, would count what no removal takes out.
func isRecordItem(av map[string]types.AttributeValue) bool {
	if _, ledgered := av[driver.LedgerAttribute].(*types.AttributeValueMemberS); ledgered {
		return true
	}
	k, ok := av["kind"].(*types.AttributeValueMemberS)
	return ok && k.Value == kindMessage
}

// decodeRecord returns the record of a message, broadcast or receipt item
// of partition p. It reads both layouts of the seeds: headers nested (seed
// 001, as this Store writes) or flat at the top level (seed 000); and
// readat NULL, or absent, as unread. Its times are read apart, whatever
// another program put there (see driver.ParseTimeAttr): a time attribute
// that holds no time is read as absent, an expiredat that holds no number
// as expired (driver.ParseExpiryAttr), and neither fails the read. Nor
// does what it never reads: the keys of its indexes (unread, tsk, spk,
// ssk) and a message's group. A ledger attribute that is NULL is no
// entry; one of another type than a string fails the read.
func (s *Store) decodeRecord(p driver.Partition, av map[string]types.AttributeValue) (driver.Record, error) {
	_, sk, err := s.itemKey(av)
	if err != nil {
		return driver.Record{}, err
	}
	id, ok := strings.CutPrefix(sk, driver.MessagePrefix)
	if !ok {
		return driver.Record{}, fmt.Errorf("dynamo: item %s/%s is not a message", p.PK(), sk)
	}
	av, times := takeTimes(av, attrReadAt, attrArchived, attrDeleted, attrInteract, attrSnoozed, attrDeliverAt, "received", "delivered")
	if h, ok := av[attrHeaders].(*types.AttributeValueMemberM); ok {
		hv, ht := takeTimes(h.Value, "received", "delivered")
		av[attrHeaders] = &types.AttributeValueMemberM{Value: hv} // av is a copy
		times["received"], times["delivered"] = ht["received"], ht["delivered"]
	}
	// counted is read apart, whatever another program put there: see
	// driver.ParseCountedAttr.
	counted := number(av[driver.CountedAttribute])
	delete(av, driver.CountedAttribute)
	aggregate := av[driver.AggregateAttribute]
	delete(av, driver.AggregateAttribute)
	// What the Store writes and never reads, whatever another program put
	// there (on a table without its index, any type): the indexes' keys,
	// and a message's group (a receipt's names its broadcast's group).
	for _, attr := range []string{attrUnread, attrTSK, attrSPK, attrSSK} {
		delete(av, attr)
	}
	if _, nested := av[attrHeaders].(*types.AttributeValueMemberM); nested {
		delete(av, attrGroup)
	} else if _, flat := av[attrAudiences]; flat {
		delete(av, attrGroup)
	}
	switch av[driver.LedgerAttribute].(type) {
	case nil, *types.AttributeValueMemberS, *types.AttributeValueMemberNULL: // an entry, or none
	default:
		// A number's decimal names no entry (whose key is a string).
		return driver.Record{}, fmt.Errorf("dynamo: decode item %s/%s: %s of type %T, not a string", p.PK(), sk, driver.LedgerAttribute, av[driver.LedgerAttribute])
	}
	var it messageItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return driver.Record{}, fmt.Errorf("dynamo: decode item %s/%s: %w", p.PK(), sk, err)
	}
	expires := s.expiry(av)
	if it.Headers == nil {
		if _, flat := av[attrAudiences]; flat {
			var f flatItem
			if err := attributevalue.UnmarshalMap(av, &f); err != nil {
				return driver.Record{}, fmt.Errorf("dynamo: decode item %s/%s: %w", p.PK(), sk, err)
			}
			it.Headers = &headersAttr{HostSystemID: f.HostSystemID, Sender: f.Sender}
			if f.Audiences != nil {
				it.Headers.Audiences = *f.Audiences
			}
		}
	}
	rec := driver.Record{Partition: p, Receipt: it.Headers == nil, Entry: it.Ledger, Message: driver.Message{ID: id, ExpiresAt: expires}}
	if rec.Ledgered() && driver.IsTimedKey(it.Timed) {
		if _, e, _, err := driver.ParseTimedKey(it.Timed, expires); err == nil && e == rec.Entry {
			rec.Timed = it.Timed // another's value is none
		}
	}
	if rec.Receipt {
		rec.Message.Audience.Group = it.Group
	}
	m := &rec.Message
	if it.Taxonomy != nil {
		m.Category = it.Taxonomy.Category
	}
	if rec.Ledgered() && !p.IsShared() {
		rec.Counted = driver.ParseCountedAttr(counted, rec.Receipt)
	}
	if rec.Ledgered() {
		// Another program's item is in no thread (see driver.Record), not
		// snoozed (only a mark, which adopts it, snoozes it) and not
		// scheduled (a scheduled record has a pending entry).
		m.Thread = it.Thread
		if !p.IsShared() {
			m.SnoozedUntil = times[attrSnoozed]
		}
		if it.Headers != nil {
			m.DeliverAt = times[attrDeliverAt]
		}
		// A snoozeduntil or deliverat that holds no time, or none at
		// all, reads as the time of the timed entry the record notes,
		// which the library writes with it (see driver.ParseTimeAttr).
		if at, _, pending, err := driver.ParseTimedKey(rec.Timed, expires); err == nil {
			switch {
			case pending && it.Headers != nil && m.DeliverAt.IsZero():
				m.DeliverAt = at
			case !pending && !p.IsShared() && m.SnoozedUntil.IsZero():
				m.SnoozedUntil = at
			}
		}
	}
	if !p.IsShared() {
		// The user's marks, which mean nothing on a broadcast, as
		// deletedat means nothing on a direct message (one the user
		// deletes is removed): another program's stray attributes are
		// not marks.
		m.ReadAt, m.ArchivedAt, m.InteractedAt = times[attrReadAt], times[attrArchived], times[attrInteract]
		if rec.Receipt {
			rec.DeletedAt = times[attrDeleted]
		}
	}
	if h := it.Headers; h != nil {
		m.HostSystemID = h.HostSystemID
		m.Sender = h.Sender
		m.Audience = driver.Audience{Kind: driver.AudienceKind(h.Audiences.Kind), Label: h.Audiences.Label, UIDs: h.Audiences.UIDs, Group: h.Audiences.Group}
		m.ReceivedAt, m.DeliveredAt = times["received"], times["delivered"]
	}
	if b := it.Message; b != nil {
		m.Title, m.Body, m.CTAURI = b.Title, b.Body, b.CTAURI
	}
	return driver.WithAggregate(rec, aggregateRead(aggregate)), nil
}

// withoutAttr returns av without attribute name (a copy).
func withoutAttr(av map[string]types.AttributeValue, name string) map[string]types.AttributeValue {
	out := make(map[string]types.AttributeValue, len(av))
	for k, v := range av {
		if k != name {
			out[k] = v
		}
	}
	return out
}

// expiry returns the expiry the TTL attribute of av holds
// (driver.ParseExpiryAttr): the zero time, expired, if it holds no number
// or av has none.
func (s *Store) expiry(av map[string]types.AttributeValue) time.Time {
	return driver.ParseExpiryAttr(number(av[s.o.ttl]))
}

// number returns v's decimal if it is a number, else "".
func number(v types.AttributeValue) string {
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		return n.Value
	}
	return ""
}

// takeTimes returns av without the time attributes names (a copy), and the
// time each holds (driver.ParseTimeAttr), absent for none.
func takeTimes(av map[string]types.AttributeValue, names ...string) (map[string]types.AttributeValue, map[string]time.Time) {
	out := maps.Clone(av)
	times := make(map[string]time.Time, len(names))
	for _, name := range names {
		v, ok := out[name]
		if !ok {
			continue
		}
		delete(out, name)
		if t, ok := driver.ParseTimeAttr(number(v)); ok {
			times[name] = t
		}
	}
	return out, times
}
