package memstore

import (
	"maps"

	"github.com/stak/inbox/driver"
)

// copyInboxConfig returns ic with its TTL map copied.
func copyInboxConfig(ic driver.InboxConfig) driver.InboxConfig {
	ic.TTL = maps.Clone(ic.TTL)
	ic.Preferences = ic.Preferences.Clone()
	return ic
}
