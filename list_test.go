package inbox_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/memstore"
)

// shortStore evaluates a random number of records per Query, between one
// and the limit asked: the contract allows a store to page short.
type shortStore struct {
	inbox.Store
	mu  sync.Mutex
	rnd *rand.Rand
}

func (s *shortStore) Query(ctx context.Context, q driver.Query) (driver.QueryResult, error) {
	s.mu.Lock()
	q.Limit = 1 + s.rnd.Intn(q.Limit)
	s.mu.Unlock()
	return s.Store.Query(ctx, q)
}

type listed struct {
	Title string
	Read  bool
}

// listAll pages through u's feed with opts and returns every message.
func listAll(t *testing.T, ib *inbox.Inbox, u inbox.User, opts inbox.ListOptions) []listed {
	t.Helper()
	var out []listed
	for i := 0; ; i++ {
		if i > 1000 {
			t.Fatal("paging does not end")
		}
		page, err := ib.List(context.Background(), u, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Messages) > max(opts.Limit, 1) {
			t.Fatalf("page of %d messages, limit %d", len(page.Messages), opts.Limit)
		}
		for _, m := range page.Messages {
			out = append(out, listed{m.Title, m.IsRead()})
		}
		if page.Cursor == "" {
			return out
		}
		opts.Cursor = page.Cursor
	}
}

func TestListPagingShortStore(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	mem := memstore.New(memstore.WithClock(clock))
	st := &shortStore{Store: mem, rnd: rand.New(rand.NewSource(7))}
	ib := inbox.New(st, inbox.WithClock(clock), inbox.WithEntropy(rand.New(rand.NewSource(1))))
	ann := scope.User("ann")

	// 60 messages, newest last: direct to ann, to bob only, and broadcasts,
	// in three categories; some read, some expired.
	type want struct {
		listed
		cat     string
		expired bool
	}
	var all []want
	rnd := rand.New(rand.NewSource(3))
	for i := 0; i < 60; i++ {
		d := inbox.Draft{Title: fmt.Sprint("m", i), Category: []string{"", "a", "b"}[i%3]}
		if i%7 == 0 {
			d.TTL = time.Minute
		}
		var id string
		switch rnd.Intn(3) {
		case 0:
			res, err := ib.Publish(ctx, scope, []string{"bob"}, d)
			if err != nil {
				t.Fatal(err)
			}
			_ = res
			continue
		case 1:
			res, err := ib.Publish(ctx, scope, []string{"ann"}, d)
			if err != nil {
				t.Fatal(err)
			}
			id = res.Message.ID
		case 2:
			msg, err := ib.Broadcast(ctx, scope, d)
			if err != nil {
				t.Fatal(err)
			}
			id = msg.ID
		}
		read := rnd.Intn(2) == 0
		if read {
			if ok, err := ib.MarkRead(ctx, ann, id); err != nil || !ok {
				t.Fatalf("MarkRead: %v %v", ok, err)
			}
		}
		all = append([]want{{listed{d.Title, read}, d.Category, d.TTL > 0}}, all...)
	}
	now = now.Add(time.Minute) // the short-lived ones expire

	for _, opts := range []inbox.ListOptions{{}, {UnreadOnly: true}, {Category: "a"}, {Category: "b", UnreadOnly: true}} {
		var expect []listed
		for _, w := range all {
			if w.expired || (opts.UnreadOnly && w.Read) || (opts.Category != "" && w.cat != opts.Category) {
				continue
			}
			expect = append(expect, w.listed)
		}
		for _, limit := range []int{1, 2, 3, 7, 20, 100} {
			opts.Limit = limit
			if diff := cmp.Diff(expect, listAll(t, ib, ann, opts)); diff != "" {
				t.Fatalf("opts %+v (-want +got):\n%s", opts, diff)
			}
		}
	}
}

func TestListArrivalsBetweenPages(t *testing.T) {
	ctx := context.Background()
	ib := inbox.New(memstore.New())
	ann := scope.User("ann")
	for i := 0; i < 10; i++ {
		if _, err := ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: fmt.Sprint("old", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	opts := inbox.ListOptions{Limit: 3}
	for {
		page, err := ib.List(ctx, ann, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Messages {
			got = append(got, m.Title)
		}
		// New messages, direct and broadcast, land between pages.
		ib.Publish(ctx, scope, []string{"ann"}, inbox.Draft{Title: "new"})
		ib.Broadcast(ctx, scope, inbox.Draft{Title: "new"})
		if page.Cursor == "" {
			break
		}
		opts.Cursor = page.Cursor
	}
	want := []string{"old9", "old8", "old7", "old6", "old5", "old4", "old3", "old2", "old1", "old0"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestListRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	ib := inbox.New(memstore.New())
	ann := scope.User("ann")
	ib.Publish(ctx, scope, []string{"ann", "bob"}, inbox.Draft{Title: "x"})
	ib.Publish(ctx, scope, []string{"ann", "bob"}, inbox.Draft{Title: "y"})
	page, err := ib.List(ctx, ann, inbox.ListOptions{Limit: 1})
	if err != nil || page.Cursor == "" {
		t.Fatalf("first page: %+v %v", page, err)
	}
	tests := []struct {
		name string
		u    inbox.User
		opts inbox.ListOptions
		want error
	}{
		{"bob uses ann's cursor", scope.User("bob"), inbox.ListOptions{Limit: 1, Cursor: page.Cursor}, inbox.ErrInvalidCursor},
		{"cursor with another filter", ann, inbox.ListOptions{Limit: 1, Cursor: page.Cursor, UnreadOnly: true}, inbox.ErrInvalidCursor},
		{"tampered cursor", ann, inbox.ListOptions{Limit: 1, Cursor: page.Cursor[:len(page.Cursor)-2] + "AA"}, inbox.ErrInvalidCursor},
		{"garbage cursor", ann, inbox.ListOptions{Cursor: "not a cursor"}, inbox.ErrInvalidCursor},
		{"negative limit", ann, inbox.ListOptions{Limit: -1}, inbox.ErrInvalidInput},
		{"huge limit", ann, inbox.ListOptions{Limit: inbox.MaxPageSize + 1}, inbox.ErrInvalidInput},
		{"bad category", ann, inbox.ListOptions{Category: "a#b"}, inbox.ErrInvalidKey},
		{"public user", scope.User(inbox.PublicGroup), inbox.ListOptions{}, inbox.ErrInvalidKey},
	}
	for _, tt := range tests {
		if _, err := ib.List(ctx, tt.u, tt.opts); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
}
