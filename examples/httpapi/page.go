package main

import (
	_ "embed"
	"net/http"
)

// indexHTML is the inbox page: plain HTML and JavaScript, no build step.
//
//go:embed index.html
var indexHTML []byte

// pageHandler serves the inbox page. The page reads its user and groups
// from its own URL (/?user=ann&groups=admins,eu) and sends them in the
// X-User and X-Groups headers of its API calls, as a real page would send
// its session's token. It reads a chat's members there too
// (&members.team=ann,bob,carol), as a real page would from the host's
// chat service, for the read ticks of the user's own messages in that
// chat (GET /messages with readby): two when every other member has read
// one.
func pageHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")
		_, _ = w.Write(indexHTML)
	})
}
