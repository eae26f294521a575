// Command httpapi serves one inbox as a small JSON API over net/http, the
// way a team would put the inbox behind its own service (see NewHandler
// for the endpoints).
//
// By default it runs on the in-memory store:
//
//	go run ./examples/httpapi -tenant acme -inbox alerts
//	curl -H 'X-User: ops' -d '{"users":["ann"],"title":"Disk full","category":"infra"}' localhost:8080/messages
//	curl -H 'X-User: ann' 'localhost:8080/messages?unread=true'
//	curl -H 'X-User: ann' localhost:8080/counts
//
// With -table (or TABLE_NAME) it uses that DynamoDB table, with the AWS
// configuration from the environment. With -dynamodb-endpoint (or
// DYNAMODB_ENDPOINT), e.g. http://localhost:8000 for DynamoDB Local, it
// talks to that endpoint with placeholder credentials and creates the table
// (default "inbox") if it is missing. Nothing consumes the table's stream
// here, so counts do not fall when DynamoDB's TTL deletes messages: in AWS,
// deploy the stream Lambda (examples/lambda) next to it.
package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/stak/inbox"
)

func main() {
	var (
		addr     = flag.String("addr", "localhost:8080", "address to listen on")
		tenant   = flag.String("tenant", "demo", "tenant key of the inbox served")
		inboxKey = flag.String("inbox", "main", "inbox key of the inbox served")
		endpoint = flag.String("dynamodb-endpoint", os.Getenv("DYNAMODB_ENDPOINT"), "DynamoDB endpoint, e.g. http://localhost:8000 for DynamoDB Local (env DYNAMODB_ENDPOINT)")
		table    = flag.String("table", os.Getenv("TABLE_NAME"), "DynamoDB table; empty with no endpoint: in-memory store (env TABLE_NAME)")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, *addr, inbox.Scope{Tenant: *tenant, Inbox: *inboxKey}, *endpoint, *table); err != nil {
		slog.Error("httpapi", "err", err)
		os.Exit(1)
	}
}

// serve runs the API of scope on addr until ctx is done.
func serve(ctx context.Context, addr string, scope inbox.Scope, endpoint, table string) error {
	if err := scope.Validate(); err != nil {
		return err
	}
	store, desc, err := openStore(ctx, endpoint, table)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Addr:              addr,
		Handler:           NewHandler(inbox.New(store), scope),
		ReadHeaderTimeout: 10 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	slog.Info("serving", "addr", addr, "tenant", scope.Tenant, "inbox", scope.Inbox, "store", desc)
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
