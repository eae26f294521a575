package memstore

import (
	"maps"

	"github.com/stak/inbox/driver"
)

// copyInboxConfig returns ic with its TTL map and preferences copied (Own
// unset).
func copyInboxConfig(ic driver.InboxConfig) driver.InboxConfig {
	ic.TTL = maps.Clone(ic.TTL)
	ic.Preferences = ic.Preferences.Clone()
	ic.Preferences.Own = false // ignored, as DynamoDB's prefs attribute has no room for it
	return ic
}
