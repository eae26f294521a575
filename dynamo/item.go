package dynamo

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox"
)

// Item kinds, the kind attribute of each record type.
const (
	kindMessage  = "UM" // message, broadcast or read receipt
	kindCounter  = "US" // stats
	kindTenant   = "TS" // tenant settings
	kindInbox    = "IC" // inbox config
	kindClaim    = "HC" // host-system-ID claim
	kindRemoval  = "RX" // applied-removal marker
	attrHeaders  = "headers"
	attrReadAt   = "readat"
	attrCategory = "taxonomy.category"
)

// messageItem is a message, broadcast or receipt item without its key and
// TTL attributes. A receipt has no headers and no message.
type messageItem struct {
	Kind      string        `dynamodbav:"kind"`
	Headers   *headersAttr  `dynamodbav:"headers,omitempty"`
	Message   *messageAttr  `dynamodbav:"message,omitempty"`
	Taxonomy  *taxonomyAttr `dynamodbav:"taxonomy,omitempty"`
	ReadAt    *int64        `dynamodbav:"readat,omitempty"`
	TenantKey string        `dynamodbav:"tenant_key"`
	InboxKey  string        `dynamodbav:"inbox_key"`
	UID       string        `dynamodbav:"uid"`
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
}

type messageAttr struct {
	Title  string `dynamodbav:"title"`
	Body   any    `dynamodbav:"body"`
	CTAURI string `dynamodbav:"cta_uri,nullempty"`
}

type taxonomyAttr struct {
	Category string `dynamodbav:"category"`
}

// counterItem is a stats item without its key attributes.
type counterItem struct {
	Kind      string `dynamodbav:"kind"`
	Published int64  `dynamodbav:"published"`
	Read      int64  `dynamodbav:"read"`
	TenantKey string `dynamodbav:"tenant_key"`
	InboxKey  string `dynamodbav:"inbox_key"`
	UID       string `dynamodbav:"uid"`
}

type tenantItem struct {
	Kind      string `dynamodbav:"kind"`
	Title     string `dynamodbav:"title"`
	TTL       string `dynamodbav:"ttl"`
	TenantKey string `dynamodbav:"tenant_key"`
}

type inboxConfigItem struct {
	Kind        string            `dynamodbav:"kind"`
	Title       string            `dynamodbav:"title"`
	Description string            `dynamodbav:"description"`
	TTL         map[string]string `dynamodbav:"ttl"`
	TenantKey   string            `dynamodbav:"tenant_key"`
	InboxKey    string            `dynamodbav:"inbox_key"`
}

type claimItem struct {
	Kind      string `dynamodbav:"kind"`
	ID        string `dynamodbav:"id"`
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
		return nil, fmt.Errorf("%w: %v", inbox.ErrInvalidInput, err)
	}
	av[s.o.pk] = &types.AttributeValueMemberS{Value: pk}
	av[s.o.sk] = &types.AttributeValueMemberS{Value: sk}
	if !expires.IsZero() {
		av[s.o.ttl] = epoch(expires)
	}
	return av, nil
}

// recordItem returns the item of a message or broadcast (never a receipt).
func (s *Store) recordItem(rec inbox.Record) (map[string]types.AttributeValue, error) {
	m := rec.Message
	it := messageItem{
		Kind: kindMessage,
		Headers: &headersAttr{
			ID:           m.ID,
			HostSystemID: m.HostSystemID,
			Sender:       m.Sender,
			Audiences:    audiencesAttr{Kind: string(m.Audience.Kind), Label: m.Audience.Label, UIDs: m.Audience.UIDs},
			Received:     m.ReceivedAt.Unix(),
			Delivered:    m.DeliveredAt.Unix(),
		},
		Message:  &messageAttr{Title: m.Title, Body: m.Body, CTAURI: m.CTAURI},
		Taxonomy: taxonomy(m.Category),
		ReadAt:   readAt(m.ReadAt),
	}
	it.TenantKey, it.InboxKey, it.UID = rec.Partition.Tenant, rec.Partition.Inbox, rec.Partition.User
	return s.item(rec.Partition.PK(), inbox.MessageSK(m.ID), it, m.ExpiresAt)
}

// receiptItem returns the read receipt created by mark mk.
func (s *Store) receiptItem(mk inbox.Mark) (map[string]types.AttributeValue, error) {
	it := messageItem{
		Kind:     kindMessage,
		Taxonomy: taxonomy(mk.Receipt.Category),
		ReadAt:   readAt(mk.ReadAt),
	}
	it.TenantKey, it.InboxKey, it.UID = mk.Key.Partition.Tenant, mk.Key.Partition.Inbox, mk.Key.Partition.User
	return s.item(mk.Key.Partition.PK(), inbox.MessageSK(mk.Key.ID), it, mk.Receipt.ExpiresAt)
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

// decodeRecord returns the record of a message, broadcast or receipt item
// of partition p.
func (s *Store) decodeRecord(p inbox.Partition, av map[string]types.AttributeValue) (inbox.Record, error) {
	_, sk, err := s.itemKey(av)
	if err != nil {
		return inbox.Record{}, err
	}
	id, ok := strings.CutPrefix(sk, inbox.MessagePrefix)
	if !ok {
		return inbox.Record{}, fmt.Errorf("dynamo: item %s/%s is not a message", p.PK(), sk)
	}
	var it messageItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return inbox.Record{}, fmt.Errorf("dynamo: decode item %s/%s: %w", p.PK(), sk, err)
	}
	expires, err := s.expiry(av)
	if err != nil {
		return inbox.Record{}, fmt.Errorf("dynamo: item %s/%s: %w", p.PK(), sk, err)
	}
	rec := inbox.Record{Partition: p, Receipt: it.Headers == nil, Message: inbox.Message{ID: id, ExpiresAt: expires}}
	m := &rec.Message
	if it.Taxonomy != nil {
		m.Category = it.Taxonomy.Category
	}
	if it.ReadAt != nil {
		m.ReadAt = fromEpoch(*it.ReadAt)
	}
	if h := it.Headers; h != nil {
		m.HostSystemID = h.HostSystemID
		m.Sender = h.Sender
		m.Audience = inbox.Audience{Kind: inbox.AudienceKind(h.Audiences.Kind), Label: h.Audiences.Label, UIDs: h.Audiences.UIDs}
		m.ReceivedAt = fromEpoch(h.Received)
		m.DeliveredAt = fromEpoch(h.Delivered)
	}
	if b := it.Message; b != nil {
		m.Title, m.Body, m.CTAURI = b.Title, b.Body, b.CTAURI
	}
	return rec, nil
}

// expiry returns the TTL attribute of av; zero if it has none.
func (s *Store) expiry(av map[string]types.AttributeValue) (time.Time, error) {
	v, ok := av[s.o.ttl]
	if !ok {
		return time.Time{}, nil
	}
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return time.Time{}, fmt.Errorf("TTL attribute %q is not a number", s.o.ttl)
	}
	sec, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("TTL attribute %q: %w", s.o.ttl, err)
	}
	return fromEpoch(sec), nil
}
