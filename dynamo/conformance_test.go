package dynamo_test

import (
	"testing"
	"time"

	"github.com/stak/inbox"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
	"github.com/stak/inbox/storetest"
)

// newConformanceStore returns a Store on a fresh table of DynamoDB Local,
// deciding claim expiry by the suite's clock. Records expire by DynamoDB's
// TTL in real time, which the suite's far-future clock never reaches, so
// expired records stay until the suite's own checks.
func newConformanceStore(t testing.TB, now func() time.Time) inbox.Store {
	c := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, c)
	return dynamo.New(c, table)
}

// TestConformance runs the conformance suite every Store must pass.
func TestConformance(t *testing.T) {
	ddblocal.Endpoint(t)
	storetest.Run(t, newConformanceStore)
}

// TestConformanceProperty runs random operation sequences against the
// suite's model.
func TestConformanceProperty(t *testing.T) {
	ddblocal.Endpoint(t)
	storetest.RunProperty(t, newConformanceStore, 300)
}
