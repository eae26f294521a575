// Package rediscache is an inbox.SharedBackend on Redis: it lets a fleet of
// processes share the snapshots of the shared partitions (an inbox's
// public partition and each group's) that every Inbox keeps in memory.
//
// Without it each process reads each shared partition from DynamoDB once
// per freshness interval (inbox.WithSharedCache), so a public partition's
// load grows with the number of processes: a thousand Lambda environments
// make a thousand reads a second at the default bound of 1 s. With it the
// first process to miss reads DynamoDB and saves the snapshot here, and
// every other process loads it from Redis: DynamoDB sees a few reads per
// shared partition per freshness interval for the whole fleet, however
// many processes serve it (measured, BenchmarkFleetSteady: 100 processes
// listing without pause make 8 to 20 public-partition requests per
// interval with Redis, 180 without; each process keeps a snapshot until a
// random point in its last half-life, so that they do not all miss at
// once). A fleet
// starting cold, with Redis empty, reads once per process that misses
// before the first has saved.
//
// Wire it with the cache's own options; every process sharing the server
// must use the same key prefix and the same freshness:
//
//	client := redis.NewClient(&redis.Options{Addr: "cache:6379",
//		DialTimeout: 100 * time.Millisecond, ReadTimeout: 100 * time.Millisecond, DialerRetries: 1})
//	ib := inbox.New(store, inbox.WithSharedBackend(rediscache.New(client)))
//
// # Costs
//
// Load is one round trip (GET and PTTL in one MULTI/EXEC transaction),
// Save one (SET with PX), Drop one (DEL). A process calls Load at most
// about once per shared partition per freshness interval (its own
// concurrent misses are collapsed, and what it loads it keeps in memory),
// Save after each read of DynamoDB, and Drop after each of its own writes
// to a shared partition (Broadcast, BroadcastGroup, Redact, the stream
// accounting of a shared record, Recount). Save and Load run in the path
// of the List or Counts that missed: a miss costs a Redis round trip, and
// a read of DynamoDB a second one. A value is a snapshot of the
// partition's newest 21 records and its stats, in JSON: about 13 KB for
// 21 typical messages, one per shared partition in use.
//
// # Failures
//
// Redis failing never fails a List or Counts (see inbox.WithSharedBackend):
// a failed or slow Load, Save or Drop, or a value that does not decode,
// makes the process read DynamoDB instead, as it would without a backend;
// only a caller whose own deadline ends first gets its context's error.
// Each failure costs the time Redis takes to answer or time out: bound it
// with the client's DialTimeout, ReadTimeout, WriteTimeout, MaxRetries and
// DialerRetries (go-redis dials 5 times, 100 ms apart, by default, so even
// a refused connection costs each call about half a second).
// A failed Drop leaves the other processes serving the snapshot from before
// the write for up to the freshness bound, as without a backend.
package rediscache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stak/inbox"
)

// DefaultPrefix is the key prefix of a Backend made without WithPrefix.
const DefaultPrefix = "stak:"

// Backend is an inbox.SharedBackend on a Redis server or cluster. It keeps
// no state of its own besides its client and prefix, and is safe for
// concurrent use (as the go-redis clients are).
type Backend struct {
	client redis.UniversalClient
	prefix string
}

var _ inbox.SharedBackend = (*Backend)(nil)

// Option configures a Backend.
type Option func(*Backend)

// WithPrefix sets the prefix of every Redis key the Backend reads and
// writes (DefaultPrefix if not set): to share one Redis server between
// applications, or between environments, without their snapshots mixing.
func WithPrefix(prefix string) Option {
	return func(b *Backend) { b.prefix = prefix }
}

// New returns a Backend that keeps its values in Redis through client (a
// *redis.Client, *redis.ClusterClient or failover client). The Backend does
// not close the client.
func New(client redis.UniversalClient, opts ...Option) *Backend {
	b := &Backend{client: client, prefix: DefaultPrefix}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Load returns the value at key and how much longer it lives, in one round
// trip: GET and PTTL in one MULTI/EXEC transaction, so the two describe the
// same value. found is false, with a nil error, if there is none. A value
// without an expiry (not written by Save) is an error.
func (b *Backend) Load(ctx context.Context, key string) (value []byte, ttl time.Duration, found bool, err error) {
	k := b.prefix + key
	var get *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err = b.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, k)
		pttl = p.PTTL(ctx, k)
		return nil
	})
	if errors.Is(err, redis.Nil) {
		return nil, 0, false, nil // GET found nothing
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("rediscache: load %q: %w", k, err)
	}
	value, err = get.Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("rediscache: load %q: %w", k, err)
	}
	// PTTL is -2 for no key (not after a GET that found one, within the
	// transaction) and -1 for a key without an expiry.
	switch ttl = pttl.Val(); {
	case ttl == -2:
		return nil, 0, false, nil
	case ttl < 0:
		return nil, 0, false, fmt.Errorf("rediscache: load %q: the key has no expiry", k)
	}
	return value, ttl, true, nil
}

// Save stores value at key for ttl, replacing any value there, in one
// round trip: SET with PX, ttl rounded up to the millisecond. A ttl of 0
// or less stores nothing and deletes any value at key (DEL), as a value
// that expires at once would.
func (b *Backend) Save(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		return b.Drop(ctx, key)
	}
	k := b.prefix + key
	ms := (ttl + time.Millisecond - 1) / time.Millisecond
	if err := b.client.Do(ctx, "set", k, value, "px", int64(ms)).Err(); err != nil {
		return fmt.Errorf("rediscache: save %q: %w", k, err)
	}
	return nil
}

// Drop deletes the value at key, if any, in one round trip (DEL).
func (b *Backend) Drop(ctx context.Context, key string) error {
	k := b.prefix + key
	if err := b.client.Del(ctx, k).Err(); err != nil {
		return fmt.Errorf("rediscache: drop %q: %w", k, err)
	}
	return nil
}
