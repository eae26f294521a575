package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// localProxy serves DynamoDB Local's API through a proxy for the test's
// life, and returns its URL: each request goes to intercept first, and
// on to Local unless intercept answered it (true).
func localProxy(t *testing.T, intercept func(w http.ResponseWriter, r *http.Request) bool) string {
	target, err := url.Parse(ddblocal.Endpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !intercept(w, r) {
			rp.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// ttlStatus returns the TTL status of table and the attribute it is on.
func ttlStatus(t *testing.T, c *dynamodb.Client, table string) (types.TimeToLiveStatus, string) {
	t.Helper()
	out, err := c.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatalf("DescribeTimeToLive %s: %v", table, err)
	}
	return out.TimeToLiveDescription.TimeToLiveStatus, aws.ToString(out.TimeToLiveDescription.AttributeName)
}

// TestCreateTableInterrupted: a create-table interrupted once the table
// exists (here as it enables TTL) leaves a table without TTL; create-table
// run again finishes it (TTL on) and prints its stream ARN, and run once
// more changes nothing. A table of that name that create-table did not
// make (other keys) is an error, and is left as it is.
func TestCreateTableInterrupted(t *testing.T) {
	c := ddblocal.Client(t)
	table := ddblocal.TableName(t)
	g := local(t, table)
	t.Cleanup(func() {
		if err := dynamo.DeleteTable(context.Background(), c, table); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	proxy := localProxy(t, func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".UpdateTimeToLive") {
			return false
		}
		io.Copy(io.Discard, r.Body)
		cancel() // the operator's Ctrl-C
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		return true
	})
	cut := with(g, "--endpoint-url", proxy, "create-table")
	if r := cliContext(ctx, t, cut...); r.code != exitError {
		t.Fatalf("create-table interrupted: exit %d, stderr %q; want 1", r.code, r.stderr)
	}
	if st, _ := ttlStatus(t, c, table); st != types.TimeToLiveStatusDisabled {
		t.Fatalf("after the interrupted create-table, TTL is %s; want it still disabled", st)
	}

	for range 2 {
		var created tableJSON
		r := cli(t, with(g, "create-table")...)
		r.ok(t).decode(t, &created)
		d, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatal(err)
		}
		if want := (tableJSON{Table: table, StreamARN: aws.ToString(d.Table.LatestStreamArn)}); created != want || want.StreamARN == "" {
			t.Errorf("create-table of the existing table printed %+v, want %+v", created, want)
		}
		if st, attr := ttlStatus(t, c, table); st != types.TimeToLiveStatusEnabled || attr != driver.TTLAttribute {
			t.Errorf("after create-table again, TTL is %s on %q; want it enabled on %s", st, attr, driver.TTLAttribute)
		}
		if !strings.Contains(r.stderr, "exists") {
			t.Errorf("create-table of the existing table does not say it exists: stderr %q", r.stderr)
		}
	}

	// Another program's table of that name.
	other := ddblocal.TableName(t)
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(other),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dynamo.DeleteTable(context.Background(), c, other); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	r := cli(t, with(local(t, other), "create-table")...)
	if r.code != exitError || !strings.Contains(r.stderr, "exists") || r.stdout != "" {
		t.Errorf("create-table of another program's table: exit %d, stdout %q, stderr %q; want 1, an error that says it exists", r.code, r.stdout, r.stderr)
	}
	if st, _ := ttlStatus(t, c, other); st != types.TimeToLiveStatusDisabled {
		t.Errorf("create-table of another program's table turned its TTL %s", st)
	}
}
