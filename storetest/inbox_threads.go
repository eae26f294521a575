package storetest

import (
	"errors"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
)

// threadTests are the Inbox subtests about threads.
func threadTests() []suiteTest {
	return []suiteTest{
		{"Threads", testThreads},
		{"ThreadsBadInput", testThreadsBadInput},
	}
}

// testThreads: List with a thread shows that thread's messages alone,
// newest first: the user's direct messages and the thread's messages to
// everyone and to the user's groups, each with the user's marks, in pages
// of any size; MarkAllRead with the thread marks exactly them; the feed
// without a thread still shows every message.
func testThreads(e *env) {
	ann, bob := e.member("ann", "admins"), e.member("bob")
	var chat, other, none, all []driver.Message
	add := func(m driver.Message, into *[]driver.Message) {
		*into = append([]driver.Message{m}, *into...)
		all = append([]driver.Message{m}, all...)
	}
	for i := range 3 {
		add(copyFor(e.publish(inbox.Draft{Title: "dm", Thread: "chat", Category: "chat"}, "ann", "bob").Message, "ann"), &chat)
		add(e.broadcastTo("admins", inbox.Draft{Title: "group", Thread: "chat"}), &chat)
		add(copyFor(e.publish(inbox.Draft{Title: "elsewhere", Thread: "other"}, "ann").Message, "ann"), &other)
		add(copyFor(e.publish(inbox.Draft{Title: "no thread"}, "ann").Message, "ann"), &none)
		if i == 1 {
			add(e.broadcast(inbox.Draft{Title: "everyone", Thread: "chat"}), &chat)
			e.broadcastTo("eu", inbox.Draft{Title: "not ann's group", Thread: "chat"})
		}
		e.clock.Advance(time.Minute)
	}
	e.markRead(ann, chat[1].ID, true) // a group message: a receipt of the thread
	e.markRead(ann, chat[2].ID, true)
	chat[1].ReadAt, chat[2].ReadAt = e.clock.Now(), e.clock.Now()
	for i := range all {
		if all[i].ID == chat[1].ID || all[i].ID == chat[2].ID {
			all[i].ReadAt = e.clock.Now()
		}
	}
	for _, limit := range []int{1, 2, 0} {
		e.wantFeed(ann, inbox.ListOptions{Limit: limit, Thread: "chat"}, chat...)
		e.wantFeed(ann, inbox.ListOptions{Limit: limit, Thread: "chat", UnreadOnly: true}, visibleIn(chat, inbox.ListOptions{UnreadOnly: true})...)
	}
	e.wantFeed(ann, inbox.ListOptions{Thread: "chat", Category: "chat"}, visibleIn(chat, inbox.ListOptions{Category: "chat"})...)
	e.wantFeed(ann, inbox.ListOptions{Thread: "none"})
	e.wantFeed(ann, inbox.ListOptions{}, all...)

	n, err := e.ib.MarkAllRead(e.ctx, ann, inbox.ListOptions{Thread: "chat"})
	if want := len(visibleIn(chat, inbox.ListOptions{UnreadOnly: true})); err != nil || n != want {
		e.t.Fatalf("MarkAllRead(thread chat) = %d, %v; want %d, nil", n, err, want)
	}
	e.wantFeed(ann, inbox.ListOptions{Thread: "chat", UnreadOnly: true})
	e.wantFeed(ann, inbox.ListOptions{Thread: "other", UnreadOnly: true}, visibleIn(other, inbox.ListOptions{UnreadOnly: true})...)
	e.wantCountsFromFeed(ann)
	// bob's copies and his view of the broadcast are his own.
	page, err := e.ib.List(e.ctx, bob, inbox.ListOptions{Thread: "chat", UnreadOnly: true})
	if err != nil || len(page.Messages) != 4 {
		e.t.Errorf("bob's unread chat: %d messages, %v; want his 3 direct ones and the broadcast", len(page.Messages), err)
	}
	for _, m := range chat {
		if m.Thread != "chat" {
			e.t.Errorf("message %s: thread %q, want chat", m.ID, m.Thread)
		}
	}
}

// testThreadsBadInput: a thread that is not a key is ErrInvalidKey in a
// Draft (nothing is written) and in ListOptions; a retry by host system ID
// with another thread is ErrConflict.
func testThreadsBadInput(e *env) {
	ann := e.user("ann")
	for _, bad := range []string{"a#b", "*", "new\nline", string(make([]byte, driver.MaxKeyLen+1))} {
		if _, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, inbox.Draft{Title: "x", Thread: bad}); !errors.Is(err, inbox.ErrInvalidKey) {
			e.t.Errorf("Publish with thread %q: %v, want ErrInvalidKey", bad, err)
		}
		if _, err := e.ib.Broadcast(e.ctx, e.scope, inbox.Draft{Title: "x", Thread: bad}); !errors.Is(err, inbox.ErrInvalidKey) {
			e.t.Errorf("Broadcast with thread %q: %v, want ErrInvalidKey", bad, err)
		}
		if _, err := e.ib.List(e.ctx, ann, inbox.ListOptions{Thread: bad}); !errors.Is(err, inbox.ErrInvalidKey) {
			e.t.Errorf("List of thread %q: %v, want ErrInvalidKey", bad, err)
		}
	}
	e.wantFeed(ann, inbox.ListOptions{})
	d := inbox.Draft{HostSystemID: "thread-retry", Title: "x", Thread: "a"}
	e.publish(d, "ann")
	d.Thread = "b"
	if _, err := e.ib.Publish(e.ctx, e.scope, []string{"ann"}, d); !errors.Is(err, inbox.ErrConflict) {
		e.t.Errorf("retry by host system ID in another thread: %v, want ErrConflict", err)
	}
	d.Thread = "a"
	if res := e.publish(d, "ann"); len(res.Duplicates) != 1 {
		e.t.Errorf("retry in the same thread: %+v, want a duplicate", res)
	}
}
