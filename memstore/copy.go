package memstore

import (
	"maps"

	"github.com/stak/inbox"
)

// copyInboxConfig returns ic with its TTL map copied.
func copyInboxConfig(ic inbox.InboxConfig) inbox.InboxConfig {
	ic.TTL = maps.Clone(ic.TTL)
	return ic
}
