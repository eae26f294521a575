// Command httpapi serves one inbox as a small JSON API over net/http, the
// way a team would put the inbox behind its own service (see NewHandler
// for the endpoints), and a live inbox page at /.
//
// By default it runs on the in-memory store:
//
//	go run . -tenant acme -inbox alerts   # in examples/httpapi
//	curl -H 'X-User: ops' -d '{"users":["ann"],"title":"Disk full","category":"infra"}' localhost:8080/messages
//	curl -H 'X-User: ops' -d '{"group":"admins","title":"Deploy at 5"}' localhost:8080/broadcasts
//	curl -H 'X-User: ann' -H 'X-Groups: admins' 'localhost:8080/messages?unread=true'
//	curl -H 'X-User: ann' -H 'X-Groups: admins' localhost:8080/counts
//	curl -X PUT -H 'X-User: ann' -d '{"muted_groups":["admins"],"muted_threads":["ann-bob"]}' localhost:8080/preferences
//	open 'http://localhost:8080/?user=ann&groups=admins'
//
// With -table (or TABLE_NAME) it uses that DynamoDB table, with the AWS
// configuration from the environment. With -dynamodb-endpoint (or
// DYNAMODB_ENDPOINT), e.g. http://localhost:8000 for DynamoDB Local, it
// talks to that endpoint with placeholder credentials, creates the table
// (default "inbox") if it is missing, and reads the table's stream in this
// process, as the Lambda function (examples/lambda) does in AWS: removals
// are accounted, and change events reach the page live, through GET
// /events. -read-stream does the same against AWS, for a single process;
// with several, deploy the Lambda and fan its events out through a pub/sub.
// The in-memory store feeds its changes to the same events
// (memstore.WithChanges), so the page is live on it too; on a table whose
// stream this process does not read (-table without -read-stream) the
// page works, but does not update by itself.
//
// A scheduled message (POST /messages or /broadcasts with deliver_at)
// shows in the "Scheduled" list (GET /scheduled, an operator's: X-Operator:
// true, on the page ?operator=1) until it is due;
// then a worker in this process (pushDue, every -due-interval) tells the
// page, which shows it in the feed: the stream reports a message when it
// is stored, not when it comes due. A broadcast's or group message's push
// reaches its whole audience, as the stream's report of it does.
//
// With -log-ops each library operation is logged (inbox.LogHooks, through
// slog's default logger): its duration, outcome, DynamoDB requests, round
// trips and capacity units. With -otel the same go to stdout as
// OpenTelemetry spans (one per operation, Store call and DynamoDB request)
// and, every -otel-interval and at exit, metrics, a JSON object a line, by
// the OpenTelemetry SDK's stdout exporters: the wiring below (otelinbox's
// Hooks over the SDK, package otelinbox/otelstdout) is what a service
// does with its own exporter. The example is a Go module of its own
// (github.com/stak/inbox/examples/httpapi), so that it can link
// OpenTelemetry while the inbox module's go.mod names none: run it from
// its directory (go run .).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/otelinbox/otelstdout"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		slog.Error("httpapi", "err", err)
		os.Exit(1)
	}
}

// run parses the command line args (without the program name) and serves
// until ctx is done; with -otel, spans and metrics go to stdout.
func run(ctx context.Context, args []string, stdout io.Writer) (err error) {
	fs := flag.NewFlagSet("httpapi", flag.ContinueOnError)
	var (
		addr     = fs.String("addr", "localhost:8080", "address to listen on")
		tenant   = fs.String("tenant", "demo", "tenant key of the inbox served")
		inboxKey = fs.String("inbox", "main", "inbox key of the inbox served")
		endpoint = fs.String("dynamodb-endpoint", os.Getenv("DYNAMODB_ENDPOINT"), "DynamoDB endpoint, e.g. http://localhost:8000 for DynamoDB Local (env DYNAMODB_ENDPOINT)")
		table    = fs.String("table", os.Getenv("TABLE_NAME"), "DynamoDB table; empty with no endpoint: in-memory store (env TABLE_NAME)")
		stream   = fs.Bool("read-stream", false, "read the table's stream in this process (always with -dynamodb-endpoint)")
		logOps   = fs.Bool("log-ops", false, "log each library operation (duration, outcome, requests, capacity units)")
		otel     = fs.Bool("otel", false, "write each library operation's OpenTelemetry spans, and the metrics, to stdout as JSON")
		every    = fs.Duration("otel-interval", time.Minute, "how often -otel writes the metrics")
		due      = fs.Duration("due-interval", time.Second, "how often to push the scheduled messages that came due (a minute would do in production)")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	var opts []inbox.Option
	switch {
	case *logOps && *otel:
		return errors.New("-log-ops and -otel: pass one")
	case *logOps:
		opts = append(opts, inbox.WithHooks(inbox.LogHooks(slog.Default())))
	case *otel:
		tel, err := otelstdout.New(stdout, "httpapi", *every)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, tel.Shutdown(context.WithoutCancel(ctx))) }()
		opts = append(opts, inbox.WithHooks(tel.Hooks))
	}
	return serve(ctx, *addr, inbox.Scope{Tenant: *tenant, Inbox: *inboxKey}, *endpoint, *table, *stream, *due, opts...)
}

// wire returns the Inbox that serves scope from b, with opts, its events
// going to a Hub, live if b feeds them.
func (b backend) wire(scope inbox.Scope, opts ...inbox.Option) (*inbox.Inbox, *Hub) {
	hub := NewHub(scope, b.stream != nil)
	return inbox.New(b.store, append(opts, inbox.WithEvents(hub.Publish))...), hub
}

// serve runs the API of scope on addr, with an Inbox of opts, until ctx
// is done, pushing what comes due every due.
func serve(ctx context.Context, addr string, scope inbox.Scope, endpoint, table string, readStream bool, due time.Duration, opts ...inbox.Option) error {
	if err := scope.Validate(); err != nil {
		return err
	}
	b, err := openStore(ctx, endpoint, table, readStream)
	if err != nil {
		return err
	}
	ib, hub := b.wire(scope, opts...)
	srv := &http.Server{
		Addr:              addr,
		Handler:           NewHandler(ib, scope, hub),
		ReadHeaderTimeout: 10 * time.Second,
		// Requests, open event streams included, end with ctx.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.ListenAndServe() }()
	go pushDue(ctx, ib, scope, hub.Publish, due)
	if b.stream != nil {
		go func() {
			if err := b.stream(ctx, ib); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("stream: %w", err)
			}
		}()
	}
	slog.Info("serving", "addr", addr, "tenant", scope.Tenant, "inbox", scope.Inbox, "store", b.desc, "stream", b.stream != nil)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
