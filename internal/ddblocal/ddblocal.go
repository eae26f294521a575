// Package ddblocal connects tests to the DynamoDB Local that `make test`
// starts (scripts/ddblocal.sh), for tests only.
//
// Tests find it through the INBOX_DYNAMODB_ENDPOINT environment variable.
// Without it they skip, with a one-line reason, so that a plain `go test`
// still runs the rest; with CI=true a missing endpoint fails the test
// instead, so CI cannot pass by skipping.
//
// Each test has a database of its own in DynamoDB Local: its clients sign
// with AccessKey, and scripts/ddblocal.sh starts Local with a database per
// access key. A test's tables are invisible to other tests, and its writes
// do not slow down theirs (Local's cost of a write grows with the stream
// records already in its database, which deleting a table keeps).
//
// Every function is safe for concurrent use by parallel tests.
package ddblocal

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	mrand "math/rand/v2"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/stak/inbox/dynamo"
)

// EndpointEnv names the environment variable holding DynamoDB Local's URL,
// e.g. http://127.0.0.1:8000.
const EndpointEnv = "INBOX_DYNAMODB_ENDPOINT"

// Region is the region the test clients sign for.
const Region = "us-east-1"

// MaxAttempts is how many times the test clients try a request: more than
// the SDK's default 3, because tests that hammer one item make DynamoDB
// answer with conflicts and throttling.
const MaxAttempts = 10

// Endpoint returns DynamoDB Local's URL. It skips t when EndpointEnv is
// unset, or fails it when the environment variable CI is "true".
func Endpoint(t testing.TB) string {
	t.Helper()
	ep := os.Getenv(EndpointEnv)
	if ep != "" {
		return ep
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is unset and CI=true: run the tests with `make test`, which starts DynamoDB Local", EndpointEnv)
	}
	t.Skipf("%s is unset: run `make test` to test against DynamoDB Local", EndpointEnv)
	return ""
}

// AccessKey returns the access key t's clients sign with: one made from
// t's name, so that t's clients share a database in DynamoDB Local that
// no other test uses (a subtest has a name, and so a database, of its
// own). Code under test that takes credentials from elsewhere, such as the
// environment, must be given this key to see t's tables.
func AccessKey(t testing.TB) string {
	h := sha256.Sum256([]byte(t.Name()))
	return "test" + hex.EncodeToString(h[:10])
}

// Config returns an AWS config for DynamoDB Local: static credentials
// (AccessKey, secret "local"), region us-east-1, the endpoint, response checksums validated only when
// required, and a standard retryer of MaxAttempts attempts with no retry
// quota and a short backoff (see backoff). It skips or fails t as Endpoint does.
func Config(t testing.TB) aws.Config {
	t.Helper()
	ep := Endpoint(t)
	return aws.Config{
		Region:                     Region,
		BaseEndpoint:               aws.String(ep),
		Credentials:                credentials.NewStaticCredentialsProvider(AccessKey(t), "local", ""),
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		RetryMaxAttempts:           MaxAttempts,
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = MaxAttempts
				o.Backoff = retry.BackoffDelayerFunc(backoff)
				o.RateLimiter = ratelimit.None
			})
		},
	}
}

// backoff waits a random time up to 20 ms times 2^attempt, at most half a
// second: DynamoDB Local answers in milliseconds, and the SDK's default
// (up to one second times 2^attempt) would make fault tests slow.
func backoff(attempt int, _ error) (time.Duration, error) {
	maxDelay := min(20*time.Millisecond<<min(attempt, 10), 500*time.Millisecond)
	return mrand.N(maxDelay) + time.Millisecond, nil
}

// Client returns a DynamoDB client for DynamoDB Local (see Config). It also
// turns off the CRC32 check of responses, which DynamoDB Local's error
// replies fail with a warning on every call. It skips or fails t as
// Endpoint does.
func Client(t testing.TB) *dynamodb.Client {
	t.Helper()
	return ClientFromConfig(Config(t))
}

// ClientFromConfig returns a DynamoDB client for cfg (typically Config with
// something changed, such as the HTTP client) with Client's options.
func ClientFromConfig(cfg aws.Config) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = true
	})
}

// StreamsClient returns a DynamoDB Streams client for DynamoDB Local (see
// Config). It skips or fails t as Endpoint does.
func StreamsClient(t testing.TB) *dynamodbstreams.Client {
	t.Helper()
	return dynamodbstreams.NewFromConfig(Config(t))
}

// NewTable creates a table with dynamo.CreateTable and opts, named after
// the test and unique, and deletes it when the test ends. It returns the
// table's name and stream ARN.
//
// DynamoDB Local's TTL deletes nothing in a table with a local secondary
// index (seen: none of 4 expired items after 40 s, where without the index
// all 4 went within a second): a test that waits for TTL deletions passes
// dynamo.WithUnreadIndex("") and dynamo.WithThreadIndex("").
func NewTable(t testing.TB, c *dynamodb.Client, opts ...dynamo.Option) (table, streamARN string) {
	t.Helper()
	table = TableName(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	streamARN, err := dynamo.CreateTable(ctx, c, table, opts...)
	if err != nil {
		t.Fatalf("create table: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := dynamo.DeleteTable(ctx, c, table); err != nil {
			t.Errorf("delete table: %v", err)
		}
	})
	return table, streamARN
}

// notTableChars matches what a table name may not contain.
var notTableChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// TableName returns a table name made of t's name and a random suffix.
func TableName(t testing.TB) string {
	name := notTableChars.ReplaceAllString(t.Name(), "_")
	if len(name) > 200 {
		name = name[:200]
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random table suffix: %v", err)
	}
	return "inbox_" + name + "_" + hex.EncodeToString(b[:])
}
