package rediscache_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stak/inbox/rediscache"
)

// addrEnv names the environment variable holding the test Redis server's
// address, host:port, as scripts/redis.sh sets it.
const addrEnv = "INBOX_REDIS_ADDR"

// newClient returns a client of the Redis server at addrEnv, closed when
// t ends. Without addrEnv it skips t, or fails it when the environment
// variable CI is "true", so that CI cannot pass by skipping.
func newClient(t testing.TB) *redis.Client {
	t.Helper()
	addr := os.Getenv(addrEnv)
	if addr == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is unset and CI=true: run the tests with `make test` or scripts/redis.sh, which start redis-server", addrEnv)
		}
		t.Skipf("%s is unset: run under scripts/redis.sh (or `make test`) to test against redis-server", addrEnv)
	}
	client := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { client.Close() })
	if err := client.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("redis-server at %s: %v", addr, err)
	}
	return client
}

// uniquePrefix returns a key prefix that no other test, nor another run of
// this one, uses.
func uniquePrefix(t testing.TB) string {
	b := make([]byte, 6)
	rand.Read(b)
	return "test:" + t.Name() + ":" + hex.EncodeToString(b) + ":"
}

func TestSaveLoad(t *testing.T) {
	ctx := context.Background()
	client := newClient(t)
	b := rediscache.New(client, rediscache.WithPrefix(uniquePrefix(t)))

	if _, _, found, err := b.Load(ctx, "missing"); err != nil || found {
		t.Fatalf("Load of a missing key: found %v, err %v; want false, nil", found, err)
	}

	want := []byte("snapshot \x00\xff bytes")
	const ttl = 5 * time.Second
	if err := b.Save(ctx, "k", want, ttl); err != nil {
		t.Fatal(err)
	}
	got, left, found, err := b.Load(ctx, "k")
	if err != nil || !found {
		t.Fatalf("Load after Save: found %v, err %v", found, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Load = %q, want %q", got, want)
	}
	if left <= 0 || left > ttl {
		t.Errorf("Load's ttl = %v, want in (0, %v]", left, ttl)
	}

	// Save replaces the value and its ttl.
	if err := b.Save(ctx, "k", []byte("v2"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, left, _, _ := b.Load(ctx, "k"); string(got) != "v2" || left <= ttl || left > time.Minute {
		t.Errorf("after a second Save: %q with ttl %v, want v2 with ttl in (%v, 1m]", got, left, ttl)
	}

	// Another prefix is another key space.
	other := rediscache.New(client, rediscache.WithPrefix(uniquePrefix(t)))
	if _, _, found, err := other.Load(ctx, "k"); err != nil || found {
		t.Errorf("Load under another prefix: found %v, err %v; want false, nil", found, err)
	}

	if err := b.Drop(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, _, found, err := b.Load(ctx, "k"); err != nil || found {
		t.Errorf("Load after Drop: found %v, err %v; want false, nil", found, err)
	}
	if err := b.Drop(ctx, "k"); err != nil {
		t.Errorf("Drop of a missing key: %v", err)
	}

	// A ttl of 0 or less stores nothing, and deletes what was there.
	if err := b.Save(ctx, "k", want, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(ctx, "k", []byte("new"), 0); err != nil {
		t.Fatal(err)
	}
	if _, _, found, err := b.Load(ctx, "k"); err != nil || found {
		t.Errorf("Load after Save with ttl 0: found %v, err %v; want false, nil", found, err)
	}

	// A sub-millisecond ttl is rounded up, not refused.
	if err := b.Save(ctx, "tiny", want, time.Microsecond); err != nil {
		t.Errorf("Save with a 1µs ttl: %v", err)
	}
}

func TestExpiry(t *testing.T) {
	ctx := context.Background()
	b := rediscache.New(newClient(t), rediscache.WithPrefix(uniquePrefix(t)))
	if err := b.Save(ctx, "k", []byte("v"), 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, left, found, err := b.Load(ctx, "k"); err != nil || !found || left > 200*time.Millisecond {
		t.Fatalf("Load at once: ttl %v, found %v, err %v", left, found, err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, _, found, err := b.Load(ctx, "k"); err != nil || found {
		t.Errorf("Load after the ttl: found %v, err %v; want false, nil", found, err)
	}
}

// TestNoExpiry: a value that Save did not write, without an expiry, is an
// error, not a value that lives for ever.
func TestNoExpiry(t *testing.T) {
	ctx := context.Background()
	client := newClient(t)
	prefix := uniquePrefix(t)
	if err := client.Set(ctx, prefix+"k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Del(context.Background(), prefix+"k") })
	if _, _, found, err := rediscache.New(client, rediscache.WithPrefix(prefix)).Load(ctx, "k"); err == nil || found {
		t.Errorf("Load of a key without expiry: found %v, err %v; want an error", found, err)
	}
}

func TestCanceledContext(t *testing.T) {
	b := rediscache.New(newClient(t), rediscache.WithPrefix(uniquePrefix(t)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, found, err := b.Load(ctx, "k"); err == nil || found {
		t.Errorf("Load with a canceled context: found %v, err %v; want an error", found, err)
	}
	if err := b.Save(ctx, "k", []byte("v"), time.Second); err == nil {
		t.Error("Save with a canceled context: no error")
	}
	if err := b.Drop(ctx, "k"); err == nil {
		t.Error("Drop with a canceled context: no error")
	}
}

// TestUnreachable: every call fails, in about the dial timeout, when the
// server does not answer.
func TestUnreachable(t *testing.T) {
	b := rediscache.New(unreachableClient(t))
	ctx := context.Background()
	start := time.Now()
	if _, _, found, err := b.Load(ctx, "k"); err == nil || found {
		t.Errorf("Load: found %v, err %v; want an error", found, err)
	}
	if err := b.Save(ctx, "k", []byte("v"), time.Second); err == nil {
		t.Error("Save: no error")
	}
	if err := b.Drop(ctx, "k"); err == nil {
		t.Error("Drop: no error")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("three calls to an unreachable server took %v", d)
	}
}
