package main

import (
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
	"github.com/stak/inbox/storetest"
)

// TestFlowDynamoDB runs the API's flow on the DynamoDB store against
// DynamoDB Local (skipped without it; `make test` starts it).
func TestFlowDynamoDB(t *testing.T) {
	c := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, c)
	// DynamoDB Local deletes items whose TTL has passed in real time, so
	// the test clock starts now.
	clock := storetest.NewClock(time.Now().UTC().Truncate(time.Second))
	ib := inbox.New(dynamo.New(c, table), inbox.WithClock(clock.Now))
	testFlow(t, newAPI(t, ib, clock))
}

// TestPreferencesAPIDynamoDB runs TestPreferencesAPI on the DynamoDB store
// against DynamoDB Local (skipped without it, failed with CI=true).
func TestPreferencesAPIDynamoDB(t *testing.T) {
	c := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, c)
	clock := storetest.NewClock(time.Now().UTC().Truncate(time.Second))
	ib := inbox.New(dynamo.New(c, table), inbox.WithClock(clock.Now))
	testPreferencesAPI(t, newAPI(t, ib, clock))
}
