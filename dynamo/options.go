package dynamo

import (
	"fmt"

	"github.com/stak/inbox"
)

// Default attribute names, as in the seeds' design.
const (
	DefaultPKAttribute  = "pk"
	DefaultSKAttribute  = "sk"
	DefaultTTLAttribute = inbox.TTLAttribute
)

// Option configures a Store (New) or the table helpers (CreateTable).
type Option func(*options)

type options struct {
	pk, sk, ttl string
}

// WithKeyAttributes sets the names of the table's partition and sort key
// attributes (default "pk" and "sk").
func WithKeyAttributes(pk, sk string) Option {
	return func(o *options) { o.pk, o.sk = pk, sk }
}

// WithTTLAttribute sets the name of the table's TTL attribute, which holds
// every record's expiry in epoch seconds (default "expiredat").
func WithTTLAttribute(name string) Option {
	return func(o *options) { o.ttl = name }
}

// itemAttributes are the attribute names the Store writes besides the key
// and TTL attributes; none of them may be used as one of those.
var itemAttributes = []string{
	"kind", "headers", "message", "taxonomy", "readat", "tenant_key", "inbox_key", "uid",
	"published", "read", "title", "description", "ttl", "id",
}

// resolve applies opts over the defaults and checks that the three
// configured names are distinct, non-empty and not used by the items.
func resolve(opts []Option) (options, error) {
	o := options{pk: DefaultPKAttribute, sk: DefaultSKAttribute, ttl: DefaultTTLAttribute}
	for _, opt := range opts {
		opt(&o)
	}
	names := map[string]string{}
	for _, n := range [][2]string{{"partition key", o.pk}, {"sort key", o.sk}, {"TTL", o.ttl}} {
		what, name := n[0], n[1]
		if name == "" {
			return o, fmt.Errorf("dynamo: empty %s attribute name", what)
		}
		if other, ok := names[name]; ok {
			return o, fmt.Errorf("dynamo: %s and %s attributes are both %q", other, what, name)
		}
		names[name] = what
		for _, a := range itemAttributes {
			if name == a {
				return o, fmt.Errorf("dynamo: %s attribute %q is an item attribute", what, name)
			}
		}
	}
	return o, nil
}
