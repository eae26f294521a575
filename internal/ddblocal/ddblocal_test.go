package ddblocal_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stak/inbox/internal/ddblocal"
)

// TestNewTable creates a table and finds it described as the helpers
// promise: a stream of new and old images and TTL on expiredat.
func TestNewTable(t *testing.T) {
	c := ddblocal.Client(t)
	table, arn := ddblocal.NewTable(t, c)
	if arn == "" {
		t.Fatal("no stream ARN")
	}
	ctx := context.Background()
	d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(d.Table.StreamSpecification.StreamViewType); got != "NEW_AND_OLD_IMAGES" {
		t.Errorf("stream view type %q, want NEW_AND_OLD_IMAGES", got)
	}
	ttl, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(ttl.TimeToLiveDescription.AttributeName); got != "expiredat" {
		t.Errorf("TTL attribute %q, want expiredat", got)
	}
}

// TestEachTestHasItsOwnDatabase: a table a test creates is seen by its
// other clients, and not by another test's (a subtest's), whose access
// key differs; DynamoDB Local started with -sharedDb would show it to all.
func TestEachTestHasItsOwnDatabase(t *testing.T) {
	c := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, c)
	describe := func(c *dynamodb.Client) error {
		_, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		return err
	}
	if err := describe(ddblocal.Client(t)); err != nil {
		t.Fatalf("another client of the test: %v", err)
	}
	parent := ddblocal.AccessKey(t)
	t.Run("other", func(t *testing.T) {
		if ddblocal.AccessKey(t) == parent {
			t.Fatalf("the subtest signs with its parent's access key %s", parent)
		}
		var missing *types.ResourceNotFoundException
		if err := describe(ddblocal.Client(t)); !errors.As(err, &missing) {
			t.Errorf("another test's client described the table: err %v, want a ResourceNotFoundException", err)
		}
	})
}

// TestMissingEndpoint runs TestNewTable without the endpoint: it must skip
// normally and fail under CI=true.
func TestMissingEndpoint(t *testing.T) {
	if os.Getenv("DDBLOCAL_CHILD") != "" {
		t.Skip("child process")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, ci := range []string{"", "true"} {
		cmd := exec.Command(exe, "-test.run", "^TestNewTable$", "-test.v")
		cmd.Env = append(withoutEnv(os.Environ(), ddblocal.EndpointEnv, "CI"), "DDBLOCAL_CHILD=1", "CI="+ci)
		out, err := cmd.CombinedOutput()
		switch {
		case ci == "" && (err != nil || !strings.Contains(string(out), "--- SKIP: TestNewTable")):
			t.Errorf("without CI: err %v, want a skip; output:\n%s", err, out)
		case ci == "true" && (err == nil || !strings.Contains(string(out), "--- FAIL: TestNewTable")):
			t.Errorf("with CI=true: err %v, want a failure; output:\n%s", err, out)
		}
	}
}

// withoutEnv returns env without the named variables.
func withoutEnv(env []string, names ...string) []string {
	var out []string
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// TestScriptPassesOutputThrough runs scripts/ddblocal.sh, which starts a
// DynamoDB Local of its own, with a command that writes to stderr and
// fails: its stderr and exit status must come through, so that a vet or
// compile error under `make test` is shown, not swallowed.
func TestScriptPassesOutputThrough(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a DynamoDB Local")
	}
	ddblocal.Endpoint(t) // the script needs what make test needs
	cmd := exec.Command("../../scripts/ddblocal.sh", "bash", "-c", `echo "endpoint $INBOX_DYNAMODB_ENDPOINT"; echo marker-on-stderr >&2; exit 3`)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("exit: %v, want status 3; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "marker-on-stderr") {
		t.Errorf("the command's stderr was lost; output:\n%s", out)
	}
	if !strings.Contains(string(out), "endpoint http://127.0.0.1:") {
		t.Errorf("the command did not get the endpoint; output:\n%s", out)
	}
}
