package inbox

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stak/inbox/driver"
)

// The page sizes of the reads that count unseen messages (see Counts): the
// first read of a partition, from the watermark this Inbox remembers for
// the user (warm) or from the newest record (cold), and the reads after it.
const (
	unseenWarmProbe = 100
	unseenColdProbe = 10
	unseenPage      = 500
)

// seenCacheSize bounds the users whose seen watermark an Inbox remembers.
const seenCacheSize = 1 << 14

// IDAt returns the greatest message ID of time t: every message published
// at or before t (by the publishing process's clock, to the millisecond)
// has an ID at most IDAt(t). Use it for ListOptions.UpTo to mean "up to a
// time".
func IDAt(t time.Time) string {
	var id ulid.ULID
	_ = id.SetTime(ulid.Timestamp(t)) // fails only after the year 10889
	for i := 6; i < len(id); i++ {
		id[i] = 0xff
	}
	return id.String()
}

// MarkSeen marks everything in u's feed up to now seen: it raises u's seen
// watermark, one small write whatever the number of messages. Counts.Unseen
// counts the unread messages above the watermark; reading a message, or
// archiving or deleting it, takes it out too. It reports whether the
// watermark moved (false if u marked seen within the same millisecond, or
// a concurrent call moved it further).
//
// A message counts as seen by its ID, which carries the clock of the
// process that published it: a message published by a process whose clock
// is behind, within that lag of the call, counts as seen.
func (ib *Inbox) MarkSeen(ctx context.Context, u User) (_ bool, err error) {
	defer ib.observe(&ctx, "MarkSeen", u.Scope, u.ID).end(&err)
	if err := u.Validate(); err != nil {
		return false, err
	}
	w := IDAt(ib.clock())
	err = ib.store.Mark(ctx, []driver.Mark{{Key: driver.Key{Partition: u.Partition()}, Now: ib.now(), Seen: w}}, nil)
	switch {
	case errors.Is(err, driver.ErrStateChanged):
		return false, nil
	case err != nil:
		return false, err
	}
	ib.seen.put(u.Partition(), w)
	return true, nil
}

// seenCache remembers the last seen watermark an Inbox saw for each of up
// to seenCacheSize users, so that Counts can read the records above it in
// the same round trip as the stats. A remembered watermark is never above
// the stored one (watermarks only rise), so a stale one only costs a
// larger read. It is safe for concurrent use.
type seenCache struct {
	mu sync.Mutex
	m  map[Partition]string
}

// get returns where Counts's first read of u's partitions starts, and its
// size: above the remembered watermark, or at the newest records. limit 0
// means no read: the user has no watermark (every unread message is
// unseen).
func (c *seenCache) get(p Partition) (after string, limit int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.m[p]
	switch {
	case !ok:
		return "", unseenColdProbe
	case w == "":
		return "", 0
	}
	return w, unseenWarmProbe
}

// put remembers w as p's watermark, if it is above the one remembered.
func (c *seenCache) put(p Partition, w string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[Partition]string)
	}
	if old, ok := c.m[p]; ok && old >= w && (old != "" || w == "") {
		return
	}
	if len(c.m) >= seenCacheSize {
		for k := range c.m { // forget one at random
			delete(c.m, k)
			break
		}
	}
	c.m[p] = w
}
