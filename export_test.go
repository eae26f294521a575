package inbox

// SnapshotsKept reports how many shared-partition snapshots ib keeps.
func SnapshotsKept(ib *Inbox) int { return ib.cache.snapshotsKept() }

// SharedCacheSize is the most snapshots an Inbox keeps.
const SharedCacheSize = sharedCacheSize

// PartitionsNoted reports how many shared partitions ib's cache notes
// beside its snapshots: as read without tallies, or as churning.
func PartitionsNoted(ib *Inbox) int {
	ib.cache.mu.Lock()
	defer ib.cache.mu.Unlock()
	return len(ib.cache.untallied) + len(ib.cache.churn)
}

// ReadsWithin is readsWithin, for its test.
var ReadsWithin = readsWithin
