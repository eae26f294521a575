package memstore

import (
	"maps"
	"slices"

	"github.com/stak/inbox"
)

// copyRecord returns rec with nothing shared with it: the audience's UIDs
// and the body are copied.
func copyRecord(rec inbox.Record) inbox.Record {
	rec.Message.Audience.UIDs = slices.Clone(rec.Message.Audience.UIDs)
	rec.Message.Body = copyBody(rec.Message.Body)
	return rec
}

// copyBody copies a JSON-like value: maps and slices of any, recursively.
// Other values (strings, numbers, booleans, nil) are immutable or copied
// by assignment.
func copyBody(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = copyBody(e)
		}
		return out
	case []any:
		if v == nil {
			return v
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyBody(e)
		}
		return out
	}
	return v
}

// copyInboxConfig returns ic with its TTL map copied.
func copyInboxConfig(ic inbox.InboxConfig) inbox.InboxConfig {
	ic.TTL = maps.Clone(ic.TTL)
	return ic
}
