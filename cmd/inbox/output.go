package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/stak/inbox"
)

// Output formats (--output).
const (
	outputJSON  = "json"
	outputTable = "table"
)

// writeJSON writes v to w as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeTable writes rows under header to w in aligned columns.
func writeTable(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range append([][]string{header}, rows...) {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = cell(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// cell returns s fit for one table cell: control characters (tabs and
// newlines too) become spaces, and "" becomes "-".
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// timeCell formats t for a table: RFC 3339 in UTC, "-" if zero.
func timeCell(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// messageJSON is a message as the command prints it.
type messageJSON struct {
	ID           string    `json:"id"`
	HostSystemID string    `json:"host_system_id,omitempty"`
	Sender       string    `json:"sender,omitempty"`
	Audience     string    `json:"audience"` // users, everyone or group
	Group        string    `json:"group,omitempty"`
	Label        string    `json:"label,omitempty"`
	Category     string    `json:"category,omitempty"`
	Title        string    `json:"title,omitempty"`
	Body         any       `json:"body,omitempty"`
	CTAURI       string    `json:"cta_uri,omitempty"`
	ReceivedAt   time.Time `json:"received_at,omitzero"`
	DeliveredAt  time.Time `json:"delivered_at,omitzero"`
	DeliverAt    time.Time `json:"deliver_at,omitzero"` // a scheduled message's
	Read         bool      `json:"read"`
	ReadAt       time.Time `json:"read_at,omitzero"`
	Archived     bool      `json:"archived"`
	ArchivedAt   time.Time `json:"archived_at,omitzero"`
	ExpiresAt    time.Time `json:"expires_at,omitzero"`
	Muted        bool      `json:"muted,omitempty"` // of a group, category or thread the user muted
}

// newMessageJSON returns m as the command prints it.
func newMessageJSON(m inbox.Message) messageJSON {
	return messageJSON{
		ID:           m.ID,
		HostSystemID: m.HostSystemID,
		Sender:       m.Sender,
		Audience:     string(m.Audience.Kind),
		Group:        m.Audience.Group,
		Label:        m.Audience.Label,
		Category:     m.Category,
		Title:        m.Title,
		Body:         m.Body,
		CTAURI:       m.CTAURI,
		ReceivedAt:   m.ReceivedAt,
		DeliveredAt:  m.DeliveredAt,
		DeliverAt:    m.DeliverAt,
		Read:         m.IsRead(),
		ReadAt:       m.ReadAt,
		Archived:     m.IsArchived(),
		ArchivedAt:   m.ArchivedAt,
		ExpiresAt:    m.ExpiresAt,
		Muted:        m.Muted,
	}
}

// audienceCell names m's audience for a table: direct, everyone or
// group:<group>.
func audienceCell(m inbox.Message) string {
	switch {
	case m.Audience.Group != "":
		return "group:" + m.Audience.Group
	case m.Audience.Kind == inbox.AudienceEveryone:
		return "everyone"
	default:
		return "direct"
	}
}

// stateCell is m's state for a table: read or unread, archived, muted.
func stateCell(m inbox.Message) string {
	s := "unread"
	if m.IsRead() {
		s = "read"
	}
	if m.IsArchived() {
		s += ",archived"
	}
	if m.Muted {
		s += ",muted"
	}
	return s
}

// pageJSON is a page of a feed as the command prints it. NextCursor is ""
// on the last page.
type pageJSON struct {
	Messages   []messageJSON `json:"messages"`
	NextCursor string        `json:"next_cursor"`
}

// tallyJSON is an inbox.Tally as the command prints it.
type tallyJSON struct {
	Total    int64 `json:"total"`
	Read     int64 `json:"read"`
	Unread   int64 `json:"unread"`
	Archived int64 `json:"archived"`
	Muted    int64 `json:"muted"`
	Unseen   int64 `json:"unseen"`
}

// newTallyJSON returns t as the command prints it.
func newTallyJSON(t inbox.Tally) tallyJSON {
	return tallyJSON{Total: t.Total, Read: t.Read, Unread: t.Unread, Archived: t.Archived, Muted: t.Muted, Unseen: t.Unseen}
}

// countsJSON is inbox.Counts as the command prints it.
type countsJSON struct {
	Total      int64                `json:"total"`
	Read       int64                `json:"read"`
	Unread     int64                `json:"unread"`
	Archived   int64                `json:"archived"`
	Muted      int64                `json:"muted"`
	Unseen     int64                `json:"unseen"`
	Categories map[string]tallyJSON `json:"categories"`
}

// newCountsJSON returns c as the command prints it; Categories is never
// nil, so JSON shows {} rather than null.
func newCountsJSON(c inbox.Counts) countsJSON {
	out := countsJSON{Total: c.Total, Read: c.Read, Unread: c.Unread, Archived: c.Archived, Muted: c.Muted, Unseen: c.Unseen, Categories: map[string]tallyJSON{}}
	for cat, t := range c.Categories {
		out.Categories[cat] = newTallyJSON(t)
	}
	return out
}

// writeCounts writes c in the format of e.
func (e *env) writeCounts(c inbox.Counts) error {
	if e.output == outputJSON {
		return writeJSON(e.stdout, newCountsJSON(c))
	}
	row := func(cat string, t inbox.Tally) []string {
		return []string{cat, fmt.Sprint(t.Total), fmt.Sprint(t.Read), fmt.Sprint(t.Unread), fmt.Sprint(t.Unseen), fmt.Sprint(t.Archived), fmt.Sprint(t.Muted)}
	}
	rows := [][]string{row("*", c.Tally)}
	for _, cat := range slices.Sorted(maps.Keys(c.Categories)) {
		rows = append(rows, row(cat, c.Categories[cat]))
	}
	return writeTable(e.stdout, []string{"CATEGORY", "TOTAL", "READ", "UNREAD", "UNSEEN", "ARCHIVED", "MUTED"}, rows)
}
