package inbox

// SnapshotsKept reports how many shared-partition snapshots ib keeps.
func SnapshotsKept(ib *Inbox) int { return ib.cache.snapshotsKept() }

// SharedCacheSize is the most snapshots an Inbox keeps.
const SharedCacheSize = sharedCacheSize
