package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/stak/inbox"
)

// subscriberBuffer is how many events an open stream may fall behind
// before the Hub drops it; the page then reconnects and reloads.
const subscriberBuffer = 64

// keepAlive is how often an idle event stream gets a comment line, so
// that proxies do not close it.
const keepAlive = 15 * time.Second

// Hub fans the inbox's change events out to the users' open event streams
// (GET /events): a change in a user's partition to that user's streams, a
// broadcast to every stream, a group message to the streams of the
// group's members. A member's read of a chat's message (a thread's) also
// goes to the streams of the others who show its ticks (see
// forwardsRead), so that a sender's page shows the second tick live.
// Pass Hub.Publish to inbox.WithEvents. In one process
// this is the whole fan-out; across processes, publish the events to a
// pub/sub the processes share (Redis, SNS, API Gateway WebSocket) and
// subscribe a Hub in each. A Hub is safe for concurrent use.
type Hub struct {
	scope inbox.Scope
	live  bool

	mu   sync.Mutex
	subs map[*subscriber]struct{}
}

// subscriber is one open event stream.
type subscriber struct {
	user    inbox.User
	events  chan inbox.Event
	dropped chan struct{} // closed when the Hub drops a subscriber that fell behind
}

// NewHub returns a Hub for the events of scope. live says whether events
// reach it (a stream is read): the page shows it.
func NewHub(scope inbox.Scope, live bool) *Hub {
	return &Hub{scope: scope, live: live, subs: map[*subscriber]struct{}{}}
}

// Publish delivers e to the streams it concerns, without blocking: a
// stream that has fallen subscriberBuffer events behind is dropped. It is
// an inbox.EventHandler and never fails.
func (h *Hub) Publish(_ context.Context, e inbox.Event) error {
	if e.Partition.Scope() != h.scope {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if !concerns(e, s.user) {
			continue
		}
		select {
		case s.events <- e:
		default:
			delete(h.subs, s)
			close(s.dropped)
		}
	}
	return nil
}

// concerns reports whether e changes what u sees: a change of u's inbox,
// or another member's read of a chat's message (forwardsRead).
func concerns(e inbox.Event, u inbox.User) bool {
	p := e.Partition
	switch {
	case p.IsPublic():
		return true
	case p.IsShared():
		return slices.Contains(u.Groups, p.Group)
	case p.User == u.ID:
		return true
	}
	return forwardsRead(e, u)
}

// forwardsRead reports whether e, another user's change, is a read of a
// chat's message that u's page shows the ticks of. The read is in the
// reader's partition, which u's stream does not follow; the Hub forwards
// it by the message it carries (inbox.Event.Message): a direct copy in a
// thread (a one-to-one chat's) to its sender, whose message it is; a
// receipt of a group's message in a thread to the group's members, and of
// everyone's to every stream, since any member may ask who has read it
// (inbox.Inbox.ReadBy; a receipt does not name the sender). So each read
// is a push to each open page of the chat's members: in a large group a
// host may rather push to the sender's pages alone, or batch the reads.
// A member's read of a group chat by her read position (a thread-read
// naming the group) goes to the group's members too. A forwarded read
// carries no more than the tick needs (see readEvent).
func forwardsRead(e inbox.Event, u inbox.User) bool {
	m := e.Message
	if e.Kind == inbox.EventThreadRead && e.Group != "" && !e.Partition.IsShared() {
		// A member read a group chat up to ReadUpTo (her read position):
		// every tick below it, to the group's members.
		return slices.Contains(u.Groups, e.Group)
	}
	if e.Kind != inbox.EventRead || m.Thread == "" || e.Partition.IsShared() {
		return false
	}
	switch {
	case m.Audience.Kind == inbox.AudienceUsers:
		return m.Sender == u.ID
	case m.Audience.Group == "":
		return true // a receipt of everyone's message
	}
	return slices.Contains(u.Groups, m.Audience.Group)
}

// subscribe opens a stream of u's events.
func (h *Hub) subscribe(u inbox.User) *subscriber {
	s := &subscriber{user: u, events: make(chan inbox.Event, subscriberBuffer), dropped: make(chan struct{})}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// unsubscribe closes s.
func (h *Hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

// eventBody is an event as GET /events sends it, in the data of a
// server-sent event named after its kind.
type eventBody struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// User is set for a change in one user's inbox, Group for a broadcast
	// ($public) or a group message.
	User    string      `json:"user,omitempty"`
	Group   string      `json:"group,omitempty"`
	Message messageBody `json:"message"`
	At      time.Time   `json:"at"`
	// Seen is the new watermark of a "seen" event.
	Seen string `json:"seen,omitempty"`
	// Thread and ReadUpTo are a "thread-read" event's: the user read the
	// chat Thread in one write, every message below ReadUpTo
	// (inbox.Event.Thread, inbox.Event.ReadUpTo). Of a one-to-one chat,
	// its messages' own "read" events follow, once the stream function
	// has written the read out on each; those reach the other member's
	// stream (see forwardsRead), the thread-read does not: the Hub does
	// not know who is in a chat. Of a group chat (Message.Group), no
	// "read" follows: the thread-read reaches the group's members.
	Thread   string `json:"thread,omitempty"`
	ReadUpTo string `json:"read_up_to,omitempty"`
	// Preferences are the user's new preferences, of a "preferences"
	// event (a mute or an unmute: the page reloads its counts).
	Preferences *preferencesBody `json:"preferences,omitempty"`
}

// readEvent returns e, another member's read that the Hub forwards (see
// forwardsRead), as GET /events sends it: the reader (User), and of the
// message only what a tick needs (its ID, thread, group, sender and
// when it was read), not the reader's other marks or the message's body.
func readEvent(e inbox.Event) eventBody {
	if e.Kind == inbox.EventThreadRead {
		return eventBody{ID: e.ID, Kind: string(e.Kind), User: e.Partition.User, At: e.At, Thread: e.Thread, ReadUpTo: e.ReadUpTo,
			Message: messageBody{Group: e.Group, Thread: e.Thread}}
	}
	m := e.Message
	return eventBody{ID: e.ID, Kind: string(e.Kind), User: e.Partition.User, At: e.At, Message: messageBody{
		ID: m.ID, Sender: m.Sender, Group: m.Audience.Group, Thread: m.Thread,
		Read: m.IsRead(), ReadAt: m.ReadAt,
	}}
}

// readyBody is the data of the first event of a stream, "ready": whether
// changes will follow.
type readyBody struct {
	Live bool `json:"live"`
}

// events serves GET /events: a text/event-stream of u's changes, an event
// "ready" first, until the client goes, the server shuts down or the
// stream falls behind.
func (h *handler) events(w http.ResponseWriter, r *http.Request, u inbox.User) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	var sub *subscriber
	if h.hub != nil {
		sub = h.hub.subscribe(u)
		defer h.hub.unsubscribe(sub)
	} else {
		sub = &subscriber{} // nil channels: nothing comes
	}
	send := func(id, name string, data any) error {
		raw, err := json.Marshal(data)
		if err != nil {
			return err
		}
		if id != "" {
			if _, err := fmt.Fprintf(w, "id: %s\n", id); err != nil {
				return err
			}
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, raw); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err := send("", "ready", readyBody{Live: h.hub != nil && h.hub.live}); err != nil {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-sub.dropped:
			return
		case <-tick.C:
			if _, err = fmt.Fprint(w, ": keep-alive\n\n"); err == nil {
				err = rc.Flush()
			}
		case e := <-sub.events:
			p := e.Partition
			body := eventBody{
				ID: e.ID, Kind: string(e.Kind), User: p.User, Group: p.Group,
				Message: newMessageBody(e.Message), At: e.At, Seen: e.Seen,
				Thread: e.Thread, ReadUpTo: e.ReadUpTo,
			}
			if e.Kind == inbox.EventPreferences {
				pb := newPreferencesBody(e.Preferences)
				body.Preferences = &pb
			}
			if !p.IsShared() && p.User != u.ID {
				body = readEvent(e)
			}
			err = send(e.ID, string(e.Kind), body)
		}
		if err != nil {
			return
		}
	}
}
