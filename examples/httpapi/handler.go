package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stak/inbox"
)

// UserHeader carries the calling user's ID, and GroupsHeader the groups
// the user is in, comma-separated, spaces around the commas allowed, as in
// any HTTP header list (at most inbox.MaxGroups). They stand in
// for real authentication: put the handler behind whatever sets them from a
// verified token (membership belongs to the host application).
const (
	UserHeader   = "X-User"
	GroupsHeader = "X-Groups"
)

// OperatorHeader, set to "true", makes the caller an operator of the
// inbox: POST /redactions and GET /scheduled (another user's messages,
// everyone's schedule) answer 403 to anyone else. It stands in for a
// role the host's authentication grants, as UserHeader does for the
// user: whatever sets them from a verified token sets it only for
// operators.
const OperatorHeader = "X-Operator"

// errForbidden is an operator's endpoint called by another (403).
var errForbidden = errors.New("httpapi: an operator's endpoint: send " + OperatorHeader + ": true")

// operatorOnly is f, an operator's endpoint: a caller without
// OperatorHeader set to true gets errForbidden.
func operatorOnly(f func(r *http.Request, u inbox.User) (reply, error)) func(r *http.Request, u inbox.User) (reply, error) {
	return func(r *http.Request, u inbox.User) (reply, error) {
		if r.Header.Get(OperatorHeader) != "true" {
			return reply{}, errForbidden
		}
		return f(r, u)
	}
}

// maxRequestBody bounds a request body: a message must fit DynamoDB's
// 400 KB item anyway, so anything much larger is refused unread.
const maxRequestBody = 1 << 20

// NewHandler returns the JSON API of one inbox, scope, over ib, and the
// inbox page at /:
//
//	GET    /                        the inbox page (index.html): feed, badges, live updates
//	GET    /messages?limit=&cursor=&unread=true&category=&upto=&archived=true  the caller's feed (or archived messages), a page at a time
//	GET    /messages?thread=&readby=true&members=  a chat's messages, each with who has read it (read_by; see readByOptions)
//	POST   /messages                publish to users: {"users": [...], "title": ..., ...}
//	POST   /broadcasts              broadcast to everyone in the inbox, or to a group: {"group": ..., "title": ..., ...}
//	POST   /messages/{id}/read      mark one message read
//	POST   /messages/{id}/archive   archive one message
//	POST   /messages/{id}/unarchive put it back in the feed
//	DELETE /messages/{id}           delete it from the caller's inbox
//	POST   /messages/read-all?category=&upto=&archived=true  mark read what that view shows
//	POST   /seen                    mark everything up to now seen (the page does on opening)
//	GET    /counts                  total, read, unread, archived, muted, unseen, overall and per category
//	GET    /preferences             the groups, categories and one-to-one chats the caller muted
//	PUT    /preferences             replace them: {"muted_groups": [...], "muted_categories": [...], "opted_out": [...], "muted_threads": [...]}
//	DELETE /preferences             drop them: the inbox's defaults apply
//	GET    /events                  server-sent events: the caller's inbox changed, or a member read a message of the caller's chats (see Hub)
//	POST   /redactions              an operator removes a message everywhere: {"id"|"host_system_id", "users", "group"}
//	GET    /scheduled?limit=&cursor=  an operator's list of what the inbox has scheduled and not yet due
//
// Every request but the page names its user in the X-User header (missing:
// 401), and the user's groups in X-Groups; that user is the reader, or the
// sender of a publish. The operator's two endpoints also need X-Operator:
// true (else 403). Errors are JSON {"error": "..."} with 400 for bad
// input, 413 for a message too large, 404 for an unknown or expired
// message or a path not served, 405 for a method a path does not take,
// 409 for a host_system_id reused for another message, 503 with a
// Retry-After for a failure that a retry may not meet (the table
// throttled the call, a write's outcome is unknown, other writes kept
// changing what the call read; retry a publish with the same
// host_system_id), 501 for GET /scheduled on a table without the
// scheduled index, and 500 otherwise (logged, not shown). Events come
// from hub, which the Inbox's EventHandler feeds (nil: /events sends none): the caller's changes, and
// another member's read of a chat's message, for its ticks (a one-to-one
// chat's to the message's sender, a group chat's to the group's members,
// everyone's to every stream; see Hub). The handler is safe for concurrent use.
func NewHandler(ib *inbox.Inbox, scope inbox.Scope, hub *Hub) http.Handler {
	h := &handler{ib: ib, scope: scope, hub: hub}
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", pageHandler())
	mux.Handle("GET /messages", h.endpoint(h.list))
	mux.Handle("POST /messages", h.endpoint(h.publish))
	mux.Handle("POST /broadcasts", h.endpoint(h.broadcast))
	mux.Handle("POST /messages/{id}/read", h.endpoint(h.mark(h.ib.MarkRead)))
	mux.Handle("POST /messages/{id}/archive", h.endpoint(h.mark(h.ib.Archive)))
	mux.Handle("POST /messages/{id}/unarchive", h.endpoint(h.mark(h.ib.Unarchive)))
	mux.Handle("POST /messages/{id}/interacted", h.endpoint(h.mark(h.ib.MarkInteracted)))
	mux.Handle("POST /messages/{id}/snooze", h.endpoint(h.snooze))
	mux.Handle("POST /messages/{id}/unsnooze", h.endpoint(h.mark(h.ib.Unsnooze)))
	mux.Handle("DELETE /messages/{id}", h.endpoint(h.mark(h.ib.Delete)))
	mux.Handle("POST /messages/read-all", h.endpoint(h.bulk(h.ib.MarkAllRead)))
	mux.Handle("POST /messages/archive-all", h.endpoint(h.bulk(h.ib.ArchiveAll)))
	mux.Handle("POST /messages/delete-all", h.endpoint(h.bulk(h.ib.DeleteAll)))
	mux.Handle("POST /seen", h.endpoint(h.markSeen))
	mux.Handle("POST /redactions", h.endpoint(operatorOnly(h.redact)))
	mux.Handle("GET /scheduled", h.endpoint(operatorOnly(h.scheduled)))
	mux.Handle("GET /counts", h.endpoint(h.counts))
	mux.Handle("GET /preferences", h.endpoint(h.preferences))
	mux.Handle("PUT /preferences", h.endpoint(h.setPreferences))
	mux.Handle("DELETE /preferences", h.endpoint(h.resetPreferences))
	mux.Handle("GET /threads", h.endpoint(h.threads))
	mux.Handle("GET /events", h.authenticated(h.events))
	return unrouted(mux)
}

// unrouted serves mux, answering what it has no route for (a path it does
// not serve, 404, or a method the path does not take, 405 with the
// path's Allow header) with a JSON error, as every other error, not with
// ServeMux's plain text.
func unrouted(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" { // a route, or a redirect to the clean path
			mux.ServeHTTP(w, r)
			return
		}
		rec := &statusRecorder{header: http.Header{}}
		h.ServeHTTP(rec, r) // ServeMux's 404 or 405
		if allow := rec.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		writeJSON(w, rec.status, errorBody{Error: r.Method + " " + r.URL.Path + ": " + strings.ToLower(http.StatusText(rec.status))})
	})
}

// statusRecorder is a ResponseWriter that keeps the header and status of
// a reply and drops its body.
type statusRecorder struct {
	header http.Header
	status int
}

func (s *statusRecorder) Header() http.Header { return s.header }

func (s *statusRecorder) WriteHeader(status int) {
	if s.status == 0 {
		s.status = status
	}
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	return len(b), nil
}

// handler serves one inbox. It holds no mutable state of its own.
type handler struct {
	ib    *inbox.Inbox
	scope inbox.Scope
	hub   *Hub
}

// reply is what an endpoint answers: a status and a body to encode as JSON.
type reply struct {
	status int
	body   any
}

// authenticated adapts f, which serves an authenticated user, to
// http.Handler: it resolves the user and the user's groups from the
// request's headers, or writes the error.
func (h *handler) authenticated(f func(w http.ResponseWriter, r *http.Request, u inbox.User)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(UserHeader)
		if id == "" {
			writeJSON(w, http.StatusUnauthorized, errorBody{Error: "missing " + UserHeader + " header"})
			return
		}
		u := h.scope.User(id)
		if g := r.Header.Get(GroupsHeader); g != "" {
			groups := strings.Split(g, ",")
			for i, group := range groups {
				groups[i] = strings.Trim(group, " \t") // a header list's spaces
			}
			u = u.InGroups(groups...)
		}
		if err := u.Validate(); err != nil {
			writeError(w, r, err)
			return
		}
		f(w, r, u)
	})
}

// endpoint adapts f, which answers an authenticated user in JSON, to
// http.Handler: it bounds the request body, and writes f's reply or error.
func (h *handler) endpoint(f func(r *http.Request, u inbox.User) (reply, error)) http.Handler {
	return h.authenticated(func(w http.ResponseWriter, r *http.Request, u inbox.User) {
		r.Body = http.MaxBytesReader(w, r.Body, maxRequestBody)
		rep, err := f(r, u)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, rep.status, rep.body)
	})
}

// listOptions reads List's filters from r's query: category, thread,
// unread, upto, archived and snoozed (and limit and cursor for a page).
func listOptions(r *http.Request) (inbox.ListOptions, error) {
	q := r.URL.Query()
	opts := inbox.ListOptions{Cursor: q.Get("cursor"), Category: q.Get("category"), Thread: q.Get("thread"), UpTo: q.Get("upto")}
	var err error
	if v := q.Get("limit"); v != "" {
		if opts.Limit, err = strconv.Atoi(v); err != nil {
			return opts, fmt.Errorf("%w: limit %q is not a number", inbox.ErrInvalidInput, v)
		}
	}
	for name, to := range map[string]*bool{"unread": &opts.UnreadOnly, "archived": &opts.Archived, "snoozed": &opts.Snoozed} {
		if v := q.Get(name); v != "" {
			if *to, err = strconv.ParseBool(v); err != nil {
				return opts, fmt.Errorf("%w: %s %q is not true or false", inbox.ErrInvalidInput, name, v)
			}
		}
	}
	return opts, nil
}

// feedFilters are the query parameters of listOptions that choose which
// messages a view holds, as against limit and cursor, which page it.
var feedFilters = []string{"category", "thread", "unread", "upto", "archived", "snoozed"}

// refuse returns ErrInvalidInput if r's query holds any of names: the
// parameters of listOptions that r's endpoint does not take. Ignored, they
// would mislead the client (a delete-all with limit=1 would delete the
// whole view).
func refuse(r *http.Request, names ...string) error {
	q := r.URL.Query()
	for _, name := range names {
		if q.Has(name) {
			return fmt.Errorf("%w: %s %s takes no %s", inbox.ErrInvalidInput, r.Method, r.URL.Path, name)
		}
	}
	return nil
}

// threads answers GET /threads: a page of u's conversations, latest
// activity first (limit and cursor as for GET /messages; no filters).
func (h *handler) threads(r *http.Request, u inbox.User) (reply, error) {
	if err := refuse(r, feedFilters...); err != nil {
		return reply{}, err
	}
	opts, err := listOptions(r)
	if err != nil {
		return reply{}, err
	}
	page, err := h.ib.ListThreads(r.Context(), u, inbox.ThreadOptions{Limit: opts.Limit, Cursor: opts.Cursor})
	if err != nil {
		return reply{}, err
	}
	out := threadsBody{Threads: make([]threadBody, len(page.Threads)), Cursor: page.Cursor}
	for i, t := range page.Threads {
		out.Threads[i] = threadBody{Thread: t.Thread, Group: t.Group, Activity: t.Activity, Latest: newMessageBody(t.Latest), tallyBody: newTallyBody(t.Tally),
			GroupMuted: t.Muted && t.Group != "", ThreadMuted: t.Muted && t.Group == ""}
	}
	return reply{http.StatusOK, out}, nil
}

// readByOptions reads from r's query whether GET /messages asks who has
// read each message (readby=true, only with a thread), and the chat's
// members (members=bob,carol): the library does not know who is in a
// chat, the host does, as it knows a user's groups (see GroupsHeader). A
// one-to-one chat's messages are read by the members named (their
// copies); a group chat's by every member who read them, or only those
// named. members without readby, or readby without a thread, is bad input.
func readByOptions(r *http.Request, opts inbox.ListOptions) (bool, []string, error) {
	q := r.URL.Query()
	var readBy bool
	if v := q.Get("readby"); v != "" {
		var err error
		if readBy, err = strconv.ParseBool(v); err != nil {
			return false, nil, fmt.Errorf("%w: readby %q is not true or false", inbox.ErrInvalidInput, v)
		}
	}
	var members []string
	if v := q.Get("members"); v != "" {
		members = strings.Split(v, ",")
	}
	switch {
	case readBy && opts.Thread == "":
		return false, nil, fmt.Errorf("%w: readby is for a thread's messages: add thread", inbox.ErrInvalidInput)
	case !readBy && q.Has("members"):
		return false, nil, fmt.Errorf("%w: members is for readby=true", inbox.ErrInvalidInput)
	}
	return readBy, members, nil
}

// list answers GET /messages: a page of u's messages, and with readby who
// has read each (one round trip more, Inbox.ReadBy's).
func (h *handler) list(r *http.Request, u inbox.User) (reply, error) {
	opts, err := listOptions(r)
	if err != nil {
		return reply{}, err
	}
	readBy, members, err := readByOptions(r, opts)
	if err != nil {
		return reply{}, err
	}
	page, err := h.ib.List(r.Context(), u, opts)
	if err != nil {
		return reply{}, err
	}
	out := pageBody{Messages: make([]messageBody, len(page.Messages)), Cursor: page.Cursor}
	for i, m := range page.Messages {
		out.Messages[i] = newMessageBody(m)
	}
	if readBy {
		ticks, err := h.ib.ReadBy(r.Context(), u, page.Messages, members...)
		if err != nil {
			return reply{}, err
		}
		for i, t := range ticks {
			out.Messages[i].ReadBy = newReadersBody(t.Readers)
		}
	}
	return reply{http.StatusOK, out}, nil
}

func (h *handler) publish(r *http.Request, u inbox.User) (reply, error) {
	var req publishRequest
	if err := decodeBody(r, &req); err != nil {
		return reply{}, err
	}
	d, err := req.draft(u)
	if err != nil {
		return reply{}, err
	}
	res, err := h.ib.Publish(r.Context(), h.scope, req.Users, d)
	err = reused(err)
	var perr *inbox.PublishError
	if errors.As(err, &perr) {
		// Some recipients got it: say who did not, and whose outcome is
		// unknown, so the client can retry them (safely, with the same
		// host_system_id).
		slog.ErrorContext(r.Context(), "publish failed for some recipients", "err", err)
		body := publishBody{Message: newMessageBody(res.Message), Delivered: res.Delivered, Duplicates: res.Duplicates}
		body.Failed = slices.Sorted(maps.Keys(perr.Failed))
		body.Unknown = slices.Sorted(maps.Keys(perr.Unknown))
		body.Error = fmt.Sprintf("publish failed for %d recipient(s), outcome unknown for %d", len(body.Failed), len(body.Unknown))
		return reply{http.StatusInternalServerError, body}, nil
	}
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusCreated, publishBody{Message: newMessageBody(res.Message), Delivered: res.Delivered, Duplicates: res.Duplicates}}, nil
}

func (h *handler) broadcast(r *http.Request, u inbox.User) (reply, error) {
	var req broadcastRequest
	if err := decodeBody(r, &req); err != nil {
		return reply{}, err
	}
	d, err := req.draft(u)
	if err != nil {
		return reply{}, err
	}
	var msg inbox.Message
	if req.Group == "" {
		msg, err = h.ib.Broadcast(r.Context(), h.scope, d)
	} else {
		msg, err = h.ib.BroadcastGroup(r.Context(), h.scope, req.Group, d)
	}
	if err != nil {
		return reply{}, reused(err)
	}
	return reply{http.StatusCreated, publishBody{Message: newMessageBody(msg)}}, nil
}

// mark returns the endpoint of a per-user mark of message {id} (read,
// archive, unarchive, delete): it replies whether the call changed
// anything.
func (h *handler) mark(op func(context.Context, inbox.User, string) (bool, error)) func(*http.Request, inbox.User) (reply, error) {
	return func(r *http.Request, u inbox.User) (reply, error) {
		changed, err := op(r.Context(), u, r.PathValue("id"))
		if err != nil {
			return reply{}, err
		}
		return reply{http.StatusOK, changedBody{Changed: changed}}, nil
	}
}

// snooze answers POST /messages/{id}/snooze?until=<RFC 3339 time>: the
// message leaves u's feed until then.
func (h *handler) snooze(r *http.Request, u inbox.User) (reply, error) {
	v := r.URL.Query().Get("until")
	until, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return reply{}, fmt.Errorf("%w: until %q is not an RFC 3339 time", inbox.ErrInvalidInput, v)
	}
	changed, err := h.ib.Snooze(r.Context(), u, r.PathValue("id"), until)
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, changedBody{Changed: changed}}, nil
}

// bulk answers a POST of an action on a whole view (read-all,
// archive-all, delete-all): the view's filters come from the query, as for
// GET /messages, with upto the newest message the view showed. It acts on
// the whole view, not a page of it: limit and cursor are bad input.
func (h *handler) bulk(action func(context.Context, inbox.User, inbox.ListOptions) (int, error)) func(*http.Request, inbox.User) (reply, error) {
	return func(r *http.Request, u inbox.User) (reply, error) {
		if err := refuse(r, "limit", "cursor"); err != nil {
			return reply{}, err
		}
		opts, err := listOptions(r)
		if err != nil {
			return reply{}, err
		}
		n, err := action(r.Context(), u, opts)
		if err != nil {
			return reply{}, err
		}
		return reply{http.StatusOK, markAllReadBody{Marked: n}}, nil
	}
}

func (h *handler) markSeen(r *http.Request, u inbox.User) (reply, error) {
	changed, err := h.ib.MarkSeen(r.Context(), u)
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, changedBody{Changed: changed}}, nil
}

// redact serves POST /redactions, for an operator (operatorOnly).
func (h *handler) redact(r *http.Request, _ inbox.User) (reply, error) {
	var req redactionRequest
	if err := decodeBody(r, &req); err != nil {
		return reply{}, err
	}
	n, err := h.ib.Redact(r.Context(), h.scope, inbox.Redaction(req))
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, redactedBody{Removed: n}}, nil
}

// scheduled serves GET /scheduled: a page of what the inbox has scheduled
// and not due yet, each copy of a message to users with its user, a
// broadcast or group message once, with its group (limit and cursor as
// for GET /messages; no filters), for an operator (operatorOnly).
func (h *handler) scheduled(r *http.Request, _ inbox.User) (reply, error) {
	if err := refuse(r, feedFilters...); err != nil {
		return reply{}, err
	}
	opts, err := listOptions(r)
	if err != nil {
		return reply{}, err
	}
	page, err := h.ib.Scheduled(r.Context(), h.scope, inbox.ScheduledOptions{Limit: opts.Limit, Cursor: opts.Cursor})
	if err != nil {
		return reply{}, err
	}
	out := scheduledBody{Deliveries: make([]deliveryBody, len(page.Deliveries)), Cursor: page.Cursor}
	for i, d := range page.Deliveries {
		out.Deliveries[i] = deliveryBody{User: d.Partition.User, Group: d.Partition.Group, Message: newMessageBody(d.Message)}
	}
	return reply{http.StatusOK, out}, nil
}

func (h *handler) counts(r *http.Request, u inbox.User) (reply, error) {
	c, err := h.ib.Counts(r.Context(), u)
	if err != nil {
		return reply{}, err
	}
	out := countsBody{tallyBody: newTallyBody(c.Tally), Unseen: c.Unseen, Snoozed: c.Snoozed, Categories: make(map[string]categoryBody, len(c.Categories))}
	for cat, t := range c.Categories {
		out.Categories[cat] = categoryBody{tallyBody: newTallyBody(t), Unseen: t.Unseen}
	}
	return reply{http.StatusOK, out}, nil
}

// preferences answers GET /preferences: the groups, categories and
// one-to-one chats u muted, and the categories she opted out of.
func (h *handler) preferences(r *http.Request, u inbox.User) (reply, error) {
	p, err := h.ib.Preferences(r.Context(), u)
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, newPreferencesBody(p)}, nil
}

// setPreferences answers PUT /preferences: it replaces u's preferences
// (the groups, categories and one-to-one chats she muted, the categories
// she opted out of) with the body's (a missing list is none), and replies
// with them as set and whether that changed them.
func (h *handler) setPreferences(r *http.Request, u inbox.User) (reply, error) {
	var req preferencesBody
	if err := decodeBody(r, &req); err != nil {
		return reply{}, err
	}
	p := inbox.Preferences{MutedGroups: req.MutedGroups, MutedCategories: req.MutedCategories, OptedOut: req.OptedOut, MutedThreads: req.MutedThreads}
	changed, err := h.ib.SetPreferences(r.Context(), u, p)
	if err != nil {
		return reply{}, err
	}
	p, err = p.Normal() // as SetPreferences keeps them: sorted
	if err != nil {
		return reply{}, err
	}
	p.Own = true
	return reply{http.StatusOK, setPreferencesBody{Changed: changed, preferencesBody: newPreferencesBody(p)}}, nil
}

// resetPreferences answers DELETE /preferences: the caller follows her
// inbox's default preferences again (Inbox.ResetPreferences); it replies
// with them, and whether she had her own.
func (h *handler) resetPreferences(r *http.Request, u inbox.User) (reply, error) {
	changed, err := h.ib.ResetPreferences(r.Context(), u)
	if err != nil {
		return reply{}, err
	}
	p, err := h.ib.Preferences(r.Context(), u)
	if err != nil {
		return reply{}, err
	}
	return reply{http.StatusOK, setPreferencesBody{Changed: changed, preferencesBody: newPreferencesBody(p)}}, nil
}

// decodeBody decodes r's JSON body into v. Malformed JSON and unknown
// fields are ErrInvalidInput; a body over maxRequestBody is ErrTooLarge.
// A number in a free-form field (a message's body) stays a json.Number,
// as sent: the library refuses one it could not give back as it was (an
// integer past 2^53, say) rather than store it rounded.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	dec.UseNumber()
	err := dec.Decode(v)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return fmt.Errorf("%w: request body over %d bytes", inbox.ErrTooLarge, maxRequestBody)
	case err != nil:
		return fmt.Errorf("%w: request body: %v", inbox.ErrInvalidInput, err)
	case dec.More():
		return fmt.Errorf("%w: request body: data after the JSON object", inbox.ErrInvalidInput)
	}
	return nil
}

// reusedHostID is a publish's ErrConflict: its host_system_id names a
// message with other content or audience, which no retry fixes (409).
// Any other ErrConflict is contention with other writes (503).
type reusedHostID struct{ error }

func (e reusedHostID) Unwrap() error { return e.error }

// reused returns err, a publish's or broadcast's, as a reusedHostID if it
// is an ErrConflict.
func reused(err error) error {
	if errors.Is(err, inbox.ErrConflict) {
		return reusedHostID{err}
	}
	return err
}

// statusOf maps an error to its HTTP status.
func statusOf(err error) int {
	var reuse reusedHostID
	switch {
	case errors.Is(err, inbox.ErrInvalidKey),
		errors.Is(err, inbox.ErrInvalidTTL),
		errors.Is(err, inbox.ErrInvalidCursor),
		errors.Is(err, inbox.ErrInvalidInput):
		return http.StatusBadRequest
	case errors.Is(err, inbox.ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, inbox.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, errForbidden):
		return http.StatusForbidden
	case errors.As(err, &reuse):
		return http.StatusConflict
	case errors.Is(err, inbox.ErrUnsupported):
		return http.StatusNotImplemented
	case errors.Is(err, inbox.ErrThrottled),
		errors.Is(err, inbox.ErrOutcomeUnknown),
		errors.Is(err, inbox.ErrConflict):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeError writes err as a JSON error. A 500's or 503's cause is
// logged, not shown to the client; a 503 asks for a retry in a second.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	msg := err.Error()
	switch status {
	case http.StatusInternalServerError:
		slog.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		msg = "internal error"
	case http.StatusServiceUnavailable:
		slog.WarnContext(r.Context(), "request failed, to retry", "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", "1")
		msg = "unavailable for now: try again"
	}
	writeJSON(w, status, errorBody{Error: msg})
}

// writeJSON writes v as the JSON body of a response with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the status is sent: nothing left to report to
}
