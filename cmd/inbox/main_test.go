package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/go-cmp/cmp"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
	"github.com/stak/inbox/internal/ddblocal"
)

// result is what one run of the command did.
type result struct {
	code           int
	stdout, stderr string
}

// hermetic makes config.LoadDefaultConfig see placeholder credentials (the
// access key of t's database in DynamoDB Local, see ddblocal.AccessKey)
// and nothing of the machine's AWS config: no region, no profile, no table.
func hermetic(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           ddblocal.AccessKey(t),
		"AWS_SECRET_ACCESS_KEY":       "local",
		"AWS_SESSION_TOKEN":           "",
		"AWS_REGION":                  "",
		"AWS_DEFAULT_REGION":          "",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
		"INBOX_TABLE":                 "",
	} {
		t.Setenv(k, v)
	}
}

// local returns the global flags for DynamoDB Local and table, after
// making the environment hermetic. It skips or fails t as
// ddblocal.Endpoint does.
func local(t *testing.T, table string) []string {
	t.Helper()
	ep := ddblocal.Endpoint(t)
	hermetic(t)
	return []string{"--endpoint-url", ep, "--region", ddblocal.Region, "--table", table}
}

// cli runs the command in-process with args.
func cli(t *testing.T, args ...string) result {
	t.Helper()
	return cliContext(context.Background(), t, args...)
}

func cliContext(ctx context.Context, t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// ok fails t unless r succeeded.
func (r result) ok(t *testing.T) result {
	t.Helper()
	if r.code != exitOK {
		t.Fatalf("exit %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	return r
}

// decode decodes r's stdout as JSON into v, which must be all of it.
func (r result) decode(t *testing.T, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %T: %v; stdout:\n%s", v, err, r.stdout)
	}
	if dec.More() {
		t.Fatalf("more than one JSON value on stdout:\n%s", r.stdout)
	}
}

// hasRow reports whether some line of table output out has exactly the
// whitespace-separated fields want.
func hasRow(out string, want ...string) bool {
	for line := range strings.Lines(out) {
		if slices.Equal(strings.Fields(line), want) {
			return true
		}
	}
	return false
}

// with returns args followed by more, in a new slice.
func with(args []string, more ...string) []string {
	return append(slices.Clip(args), more...)
}

func TestCreateAndDeleteTable(t *testing.T) {
	c := ddblocal.Client(t)
	table := ddblocal.TableName(t)
	g := local(t, table)
	ctx := context.Background()
	t.Cleanup(func() {
		if err := dynamo.DeleteTable(context.Background(), c, table); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})

	var created tableJSON
	cli(t, with(g, "create-table")...).ok(t).decode(t, &created)
	d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatalf("the table was not created: %v", err)
	}
	want := tableJSON{Table: table, StreamARN: aws.ToString(d.Table.LatestStreamArn)}
	if diff := cmp.Diff(want, created); diff != "" || want.StreamARN == "" {
		t.Errorf("create-table printed (-want +got):\n%s", diff)
	}
	if got := d.Table.StreamSpecification.StreamViewType; got != types.StreamViewTypeNewAndOldImages {
		t.Errorf("stream view type %q, want NEW_AND_OLD_IMAGES", got)
	}
	ttl, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != driver.TTLAttribute {
		t.Errorf("TTL: %+v, %v; want it on %s", ttl, err, driver.TTLAttribute)
	}
	var indexes []string
	for _, lsi := range d.Table.LocalSecondaryIndexes {
		indexes = append(indexes, aws.ToString(lsi.IndexName))
	}
	slices.Sort(indexes)
	if want := []string{dynamo.DefaultThreadIndex, dynamo.DefaultUnreadIndex}; !slices.Equal(indexes, want) {
		t.Errorf("local secondary indexes %v, want %v", indexes, want)
	}
	if g := d.Table.GlobalSecondaryIndexes; len(g) != 1 || aws.ToString(g[0].IndexName) != dynamo.DefaultScheduledIndex {
		t.Errorf("global secondary indexes %+v, want %s", g, dynamo.DefaultScheduledIndex)
	}

	// --unread-index "" --thread-index "": a table without the indexes,
	// which feed --unread then reads without.
	bare := ddblocal.TableName(t)
	t.Cleanup(func() {
		if err := dynamo.DeleteTable(context.Background(), c, bare); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	noIndex := with(local(t, bare), "--unread-index", "", "--thread-index", "", "--scheduled-index", "")
	cli(t, with(noIndex, "create-table")...).ok(t)
	if d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(bare)}); err != nil || len(d.Table.LocalSecondaryIndexes) != 0 || len(d.Table.GlobalSecondaryIndexes) != 0 {
		t.Errorf("create-table without indexes: %v, indexes %+v and %+v; want none", err, d.Table.LocalSecondaryIndexes, d.Table.GlobalSecondaryIndexes)
	}
	cli(t, with(noIndex, "feed", "--tenant", "acme", "--inbox", "alerts", "--user", "ann", "--unread")...).ok(t)
	if r := cli(t, with(local(t, bare), "feed", "--tenant", "acme", "--inbox", "alerts", "--user", "ann", "--unread")...); r.code != exitError || !strings.Contains(r.stderr, "WithUnreadIndex") {
		t.Errorf("feed --unread on a table without the index: exit %d, stderr %q; want 1 and the missing index named", r.code, r.stderr)
	}

	// Creating it again finds it complete: the same table and stream.
	r := cli(t, with(g, "-o", "table", "create-table")...).ok(t)
	if !hasRow(r.stdout, table, want.StreamARN) || !strings.Contains(r.stderr, "exists") {
		t.Errorf("create-table of an existing table printed %q, stderr %q; want the table and its stream ARN, and that it exists", r.stdout, r.stderr)
	}
	// The table without the indexes is not the table the default flags
	// name: a runtime error, status 1.
	r = cli(t, with(local(t, bare), "create-table")...)
	if r.code != exitError || !strings.Contains(r.stderr, "inbox: create-table: dynamo: table "+bare+" exists without the index unread") {
		t.Errorf("create-table of a table without the indexes: exit %d, stderr %q; want 1 and the missing index named", r.code, r.stderr)
	}

	r = cli(t, with(g, "-o", "table", "delete-table")...).ok(t)
	if !hasRow(r.stdout, "TABLE", "STATUS") || !hasRow(r.stdout, table, "deleted") {
		t.Errorf("delete-table -o table printed:\n%s", r.stdout)
	}
	_, err = c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if missing := new(types.ResourceNotFoundException); !errors.As(err, &missing) {
		t.Errorf("after delete-table, DescribeTable: %v; want ResourceNotFoundException", err)
	}

	// A command on the deleted table is a runtime error.
	r = cli(t, with(g, "counts", "--tenant", "acme", "--inbox", "alerts", "--user", "ann")...)
	if r.code != exitError || !strings.HasPrefix(r.stderr, "inbox: counts: ") {
		t.Errorf("counts on a deleted table: exit %d, stderr %q; want 1", r.code, r.stderr)
	}
}

// fixture is an inbox with messages, on its own table.
type fixture struct {
	raw   *dynamodb.Client
	table string
	ib    *inbox.Inbox
	scope inbox.Scope
	g     []string // the global flags
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	raw := ddblocal.Client(t)
	table, _ := ddblocal.NewTable(t, raw)
	return &fixture{
		raw:   raw,
		table: table,
		g:     local(t, table),
		// No cache: the test sees at once what the command wrote.
		ib:    inbox.New(dynamo.New(raw, table), inbox.WithSharedCache(0)),
		scope: inbox.Scope{Tenant: "acme", Inbox: "alerts"},
	}
}

// publish publishes d to users of s and returns its ID.
func (f *fixture) publish(t *testing.T, s inbox.Scope, users []string, d inbox.Draft) string {
	t.Helper()
	res, err := f.ib.Publish(context.Background(), s, users, d)
	if err != nil {
		t.Fatalf("Publish %q: %v", d.Title, err)
	}
	return res.Message.ID
}

// counts returns u's counts, as the library computes them.
func (f *fixture) counts(t *testing.T, u inbox.User) inbox.Counts {
	t.Helper()
	c, err := f.ib.Counts(context.Background(), u)
	if err != nil {
		t.Fatalf("Counts(%s): %v", u.ID, err)
	}
	return c
}

// bump adds n to the published tally of p's total counter, behind the
// library's back.
func (f *fixture) bump(t *testing.T, p inbox.Partition, n int) {
	t.Helper()
	_, err := f.raw.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(f.table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: p.PK()},
			"sk": &types.AttributeValueMemberS{Value: driver.CounterSK("", "")},
		},
		UpdateExpression:          aws.String("ADD published :n"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":n": &types.AttributeValueMemberN{Value: strconv.Itoa(n)}},
	})
	if err != nil {
		t.Fatalf("bump the counter of %s: %v", p.PK(), err)
	}
}

// deleteItem deletes the message item at k behind the library's back, as
// an operator's DeleteItem would (the stream would account it later).
func (f *fixture) deleteItem(t *testing.T, k driver.Key) {
	t.Helper()
	_, err := f.raw.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(f.table),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: k.Partition.PK()},
			"sk": &types.AttributeValueMemberS{Value: driver.MessageSK(k.ID)},
		},
		ConditionExpression: aws.String("attribute_exists(pk)"),
	})
	if err != nil {
		t.Fatalf("delete %s %s: %v", k.Partition.PK(), k.ID, err)
	}
}

// feedLine is what the feed tests compare of a printed message.
type feedLine struct {
	ID, Title, Audience, Group, Category string
	Read, Archived                       bool
}

func feedLines(p pageJSON) []feedLine {
	out := []feedLine{}
	for _, m := range p.Messages {
		out = append(out, feedLine{m.ID, m.Title, m.Audience, m.Group, m.Category, m.Read, m.Archived})
	}
	return out
}

func TestFeedAndCounts(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ann := f.scope.User("ann").InGroups("admins")
	invoice := f.publish(t, f.scope, []string{"ann", "bob"}, inbox.Draft{Category: "billing", Title: "Invoice"})
	signin := f.publish(t, f.scope, []string{"ann"}, inbox.Draft{Category: "security", Title: "Sign-in"})
	maint, err := f.ib.Broadcast(ctx, f.scope, inbox.Draft{Category: "news", Title: "Maintenance"})
	if err != nil {
		t.Fatal(err)
	}
	deploy, err := f.ib.BroadcastGroup(ctx, f.scope, "admins", inbox.Draft{Category: "ops", Title: "Deploy"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{invoice, maint.ID} {
		if ok, err := f.ib.MarkRead(ctx, ann, id); err != nil || !ok {
			t.Fatalf("MarkRead(%s) = %v, %v", id, ok, err)
		}
	}
	if ok, err := f.ib.Archive(ctx, ann, signin); err != nil || !ok {
		t.Fatalf("Archive = %v, %v", ok, err)
	}
	annFlags := with(f.g, "--tenant", "acme", "--inbox", "alerts", "--user", "ann", "--group", "admins")

	var (
		lDeploy  = feedLine{deploy.ID, "Deploy", "group", "admins", "ops", false, false}
		lMaint   = feedLine{maint.ID, "Maintenance", "everyone", "", "news", true, false}
		lInvoice = feedLine{invoice, "Invoice", "users", "", "billing", true, false}
		lSignin  = feedLine{signin, "Sign-in", "users", "", "security", false, true}
	)
	for _, c := range []struct {
		name   string
		args   []string
		want   []feedLine
		paging bool // want a next cursor
	}{
		{"whole feed", nil, []feedLine{lDeploy, lMaint, lInvoice}, false},
		{"first page", []string{"--limit", "2"}, []feedLine{lDeploy, lMaint}, true},
		{"unread", []string{"--unread"}, []feedLine{lDeploy}, false},
		{"category", []string{"--category", "billing"}, []feedLine{lInvoice}, false},
		{"archived", []string{"--archived"}, []feedLine{lSignin}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var p pageJSON
			cli(t, with(slices.Concat([]string{"feed"}, annFlags), c.args...)...).ok(t).decode(t, &p)
			if diff := cmp.Diff(c.want, feedLines(p)); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			if (p.NextCursor != "") != c.paging {
				t.Errorf("next_cursor %q, want one: %v", p.NextCursor, c.paging)
			}
		})
	}
	// The first page's cursor gives the rest; without the group, its
	// message is not in the feed.
	var first, rest, noGroup pageJSON
	cli(t, with(slices.Concat([]string{"feed"}, annFlags), "--limit", "2")...).ok(t).decode(t, &first)
	cli(t, with(slices.Concat([]string{"feed"}, annFlags), "--limit", "2", "--cursor", first.NextCursor)...).ok(t).decode(t, &rest)
	if diff := cmp.Diff([]feedLine{lInvoice}, feedLines(rest)); diff != "" || rest.NextCursor != "" {
		t.Errorf("second page (-want +got):\n%s\nnext_cursor %q", diff, rest.NextCursor)
	}
	cli(t, with(f.g, "feed", "--tenant", "acme", "--inbox", "alerts", "--user", "ann")...).ok(t).decode(t, &noGroup)
	if diff := cmp.Diff([]feedLine{lMaint, lInvoice}, feedLines(noGroup)); diff != "" {
		t.Errorf("feed without --group (-want +got):\n%s", diff)
	}

	// A tab's table: aligned columns, one row a message.
	r := cli(t, with(slices.Concat([]string{"-o", "table", "feed"}, annFlags), "--limit", "2")...).ok(t)
	if !hasRow(r.stdout, "ID", "DELIVERED", "AUDIENCE", "CATEGORY", "STATE", "TITLE") {
		t.Errorf("feed -o table has no header:\n%s", r.stdout)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) < 3 ||
		!slices.Equal(strings.Fields(lines[1])[2:], []string{"group:admins", "ops", "unread", "Deploy"}) || !strings.HasPrefix(lines[1], deploy.ID+"  ") ||
		!slices.Equal(strings.Fields(lines[2])[2:], []string{"everyone", "news", "read", "Maintenance"}) ||
		strings.Index(lines[0], "TITLE") != strings.Index(lines[1], "Deploy") || strings.Index(lines[0], "TITLE") != strings.Index(lines[2], "Maintenance") {
		t.Errorf("feed -o table rows are not the messages in aligned columns:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "next cursor: ") {
		t.Errorf("feed -o table does not show the next cursor:\n%s", r.stdout)
	}

	var counts countsJSON
	cli(t, slices.Concat([]string{"counts"}, annFlags)...).ok(t).decode(t, &counts)
	want := countsJSON{
		Total: 3, Read: 2, Unread: 1, Archived: 1, Unseen: 1,
		Categories: map[string]tallyJSON{
			"billing":  {Total: 1, Read: 1},
			"news":     {Total: 1, Read: 1},
			"ops":      {Total: 1, Unread: 1, Unseen: 1},
			"security": {Archived: 1},
		},
	}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	// Without the group: its message is not counted.
	var plain countsJSON
	cli(t, with(f.g, "counts", "--tenant", "acme", "--inbox", "alerts", "--user", "ann")...).ok(t).decode(t, &plain)
	if diff := cmp.Diff(countsJSON{Total: 2, Read: 2, Archived: 1, Categories: map[string]tallyJSON{
		"billing": {Total: 1, Read: 1}, "news": {Total: 1, Read: 1}, "security": {Archived: 1},
	}}, plain); diff != "" {
		t.Errorf("counts without --group (-want +got):\n%s", diff)
	}
	r = cli(t, slices.Concat([]string{"counts", "-o", "table"}, annFlags)...).ok(t)
	for _, row := range [][]string{
		{"CATEGORY", "TOTAL", "READ", "UNREAD", "UNSEEN", "ARCHIVED", "MUTED"},
		{"*", "3", "2", "1", "1", "1", "0"},
		{"ops", "1", "0", "1", "1", "0", "0"},
		{"security", "0", "0", "0", "0", "1", "0"},
	} {
		if !hasRow(r.stdout, row...) {
			t.Errorf("counts -o table has no row %q:\n%s", row, r.stdout)
		}
	}
}

func TestRecountAll(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ann, bob, carol := f.scope.User("ann").InGroups("admins"), f.scope.User("bob"), f.scope.User("carol")
	invoice := f.publish(t, f.scope, []string{"ann", "bob", "carol"}, inbox.Draft{Category: "billing", Title: "Invoice"})
	maint, err := f.ib.Broadcast(ctx, f.scope, inbox.Draft{Title: "Maintenance"})
	if err != nil {
		t.Fatal(err)
	}
	deploy, err := f.ib.BroadcastGroup(ctx, f.scope, "admins", inbox.Draft{Title: "Deploy"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		u  inbox.User
		id string
	}{{ann, maint.ID}, {ann, deploy.ID}, {bob, invoice}} {
		if ok, err := f.ib.MarkRead(ctx, m.u, m.id); err != nil || !ok {
			t.Fatalf("MarkRead = %v, %v", ok, err)
		}
	}
	// The same user in another inbox of the tenant, and in another tenant
	// whose key starts with this one's: the recount must leave them alone.
	elsewhere := []inbox.Scope{{Tenant: "acme", Inbox: "other"}, {Tenant: "acmex", Inbox: "alerts"}}
	for _, s := range elsewhere {
		f.publish(t, s, []string{"ann"}, inbox.Draft{Title: "Elsewhere"})
	}
	// No one marked seen: the unread are unseen.
	want := map[string]inbox.Tally{
		"ann":   {Total: 3, Read: 2, Unread: 1, Unseen: 1},
		"bob":   {Total: 2, Read: 1, Unread: 1, Unseen: 1},
		"carol": {Total: 2, Unread: 2, Unseen: 2},
	}
	users := []inbox.User{ann, bob, carol}
	for _, u := range users {
		if got := f.counts(t, u).Tally; got != want[u.ID] {
			t.Fatalf("before the damage, %s's counts are %+v, want %+v", u.ID, got, want[u.ID])
		}
	}

	// The damage: ann's counter and the public one's drift, and carol's
	// copy of the invoice is deleted by hand, with no stream to account it.
	f.bump(t, inbox.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}, 4)
	f.bump(t, inbox.Partition{Tenant: "acme", Inbox: "alerts", Group: inbox.PublicGroup}, 2)
	f.deleteItem(t, driver.Key{Partition: inbox.Partition{Tenant: "acme", Inbox: "alerts", User: "carol"}, ID: invoice})
	for _, s := range elsewhere {
		f.bump(t, inbox.Partition{Tenant: s.Tenant, Inbox: s.Inbox, User: "ann"}, 5)
	}
	if got := f.counts(t, ann).Total; got != 3+4+2 {
		t.Fatalf("the damage did not show: ann's total is %d", got)
	}
	if got := f.counts(t, carol).Total; got != 2+2 {
		t.Fatalf("the damage did not show: carol's total is %d", got)
	}

	// The table from INBOX_TABLE, for once.
	t.Setenv("INBOX_TABLE", f.table)
	g := slices.DeleteFunc(slices.Clone(f.g), func(a string) bool { return a == "--table" || a == f.table })
	r := cli(t, with(g, "recount", "--tenant", "acme", "--inbox", "alerts", "--all", "--parallel", "2")...).ok(t)
	var sum recountJSON
	r.decode(t, &sum)
	wantSum := recountJSON{Tenant: "acme", Inbox: "alerts", Partitions: 5, Repaired: 5, Errors: []partitionErrorJSON{}}
	if diff := cmp.Diff(wantSum, sum); diff != "" {
		t.Errorf("recount --all summary (-want +got):\n%s", diff)
	}
	for _, line := range []string{"recount: scan: 1 page(s) read, 5 partitions of acme/alerts found\n", "recount: 5/5 partitions\n"} {
		if !strings.Contains(r.stderr, line) {
			t.Errorf("recount --all progress lacks %q:\n%s", line, r.stderr)
		}
	}
	want["carol"] = inbox.Tally{Total: 1, Unread: 1, Unseen: 1} // her invoice is gone
	for _, u := range users {
		if got := f.counts(t, u).Tally; got != want[u.ID] {
			t.Errorf("after recount --all, %s's counts are %+v, want %+v", u.ID, got, want[u.ID])
		}
	}
	for _, s := range elsewhere {
		if got := f.counts(t, s.User("ann")).Total; got != 1+5 {
			t.Errorf("recount --all of acme/alerts changed ann's counts in %s/%s: total %d, want 6 (still damaged)", s.Tenant, s.Inbox, got)
		}
	}

	// One user, in a table.
	r = cli(t, with(f.g, "-o", "table", "recount", "--tenant", "acme", "--inbox", "other", "--user", "ann")...).ok(t)
	if !hasRow(r.stdout, "*", "1", "0", "1", "1", "0", "0") {
		t.Errorf("recount --user -o table printed:\n%s", r.stdout)
	}
	if got := f.counts(t, elsewhere[0].User("ann")).Total; got != 1 {
		t.Errorf("after recount --user, ann's total in acme/other is %d, want 1", got)
	}

	// -o table summary.
	r = cli(t, with(f.g, "-o", "table", "recount", "--tenant", "acmex", "--inbox", "alerts", "--all")...).ok(t)
	if !hasRow(r.stdout, "TENANT", "INBOX", "PARTITIONS", "REPAIRED", "FAILED") || !hasRow(r.stdout, "acmex", "alerts", "1", "1", "0") {
		t.Errorf("recount --all -o table printed:\n%s", r.stdout)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startStream runs the stream command with args until the returned stop is
// called; stop returns its exit status.
func startStream(t *testing.T, args []string) (stdout, stderr *syncBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, stdout, stderr) }()
	var code *int
	stop = func() int {
		if code == nil {
			cancel()
			c := <-done
			code = &c
		}
		return *code
	}
	t.Cleanup(func() { stop() })
	return stdout, stderr, stop
}

// eventually polls cond every 100 ms for up to 40 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(40 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

func TestStream(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ann := f.scope.User("ann")
	id := f.publish(t, f.scope, []string{"ann"}, inbox.Draft{Category: "ops", Title: "Disk full"})
	if ok, err := f.ib.MarkRead(ctx, ann, id); err != nil || !ok {
		t.Fatalf("MarkRead = %v, %v", ok, err)
	}
	// An operator deletes the message (no TTL): the counts keep it until
	// the stream's removal is accounted.
	f.deleteItem(t, driver.Key{Partition: inbox.Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}, ID: id})
	if got := f.counts(t, ann).Tally; got != (inbox.Tally{Total: 1, Read: 1}) {
		t.Fatalf("before the stream, counts %+v; want the deleted message still counted", got)
	}

	stdout, stderr, stop := startStream(t, with(f.g, "stream", "--interval", "100ms"))
	eventually(t, "the stream to account the deletion", func() bool { return f.counts(t, ann).Total == 0 })
	eventually(t, "the batch's report", func() bool { return strings.Contains(stderr.String(), "stream: batch: ") })
	if code := stop(); code != exitOK {
		t.Fatalf("stream exited %d after cancellation, want 0; stderr:\n%s", code, stderr)
	}
	if got := f.counts(t, ann).Tally; got != (inbox.Tally{}) {
		t.Errorf("after the stream, counts %+v; want zero", got)
	}
	var kinds []string
	for line := range strings.Lines(stdout.String()) {
		var ev eventJSON
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stream printed a line that is not a JSON event: %q: %v", line, err)
		}
		if ev.Message == nil || ev.Message.ID != id || ev.Partition != "t#acmeU#ann#alerts" || ev.User != "ann" {
			t.Errorf("event %+v is not of ann's message", ev)
		}
		kinds = append(kinds, ev.Kind)
	}
	if diff := cmp.Diff([]string{"created", "read", "deleted"}, kinds); diff != "" {
		t.Errorf("events printed (-want +got):\n%s", diff)
	}
	for _, s := range []string{"stream: reading arn:", "records handed to the handler", "stream: stopped; "} {
		if !strings.Contains(stderr.String(), s) {
			t.Errorf("stream's stderr lacks %q:\n%s", s, stderr)
		}
	}

	// From the oldest record again: the removal is delivered again, and
	// changes nothing; events come again, here as a table.
	stdout, stderr, stop = startStream(t, with(f.g, "-o", "table", "stream", "--interval", "100ms", "--from", "trim-horizon"))
	eventually(t, "the events as a table", func() bool { return strings.Contains(stdout.String(), "deleted") })
	if code := stop(); code != exitOK {
		t.Fatalf("stream -o table exited %d, want 0; stderr:\n%s", code, stderr)
	}
	if !hasRow(stdout.String(), "AT", "KIND", "PARTITION", "MESSAGE", "TITLE") {
		t.Errorf("stream -o table has no header:\n%s", stdout)
	}
	found := false
	for line := range strings.Lines(stdout.String()) {
		fs := strings.Fields(line)
		found = found || len(fs) == 6 && fs[1] == "deleted" && fs[2] == "t#acmeU#ann#alerts" && fs[3] == id && fs[4]+" "+fs[5] == "Disk full"
	}
	if !found {
		t.Errorf("stream -o table has no row of the deletion:\n%s", stdout)
	}
	if got := f.counts(t, ann).Tally; got != (inbox.Tally{}) {
		t.Errorf("after the stream's redelivery, counts %+v; want zero", got)
	}

	// By default a stream resumes after the last record the one before
	// it accepted (its checkpoint in the table): only what is new comes.
	id2 := f.publish(t, f.scope, []string{"ann"}, inbox.Draft{Category: "ops", Title: "Disk fine"})
	stdout, stderr, stop = startStream(t, with(f.g, "stream", "--interval", "100ms"))
	eventually(t, "the new message's event", func() bool { return strings.Contains(stdout.String(), id2) })
	if code := stop(); code != exitOK {
		t.Fatalf("stream exited %d, want 0; stderr:\n%s", code, stderr)
	}
	for line := range strings.Lines(stdout.String()) {
		var ev eventJSON
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Message == nil || ev.Message.ID != id2 || ev.Kind != "created" {
			t.Errorf("resumed stream printed %q, want only the new message's creation", line)
		}
	}
	if !strings.Contains(stderr.String(), "from checkpoint (consumer inbox-stream)") {
		t.Errorf("stream's stderr does not say where it started:\n%s", stderr)
	}
}

// TestBadInput runs command lines that are wrong: each must fail with
// status 2 and say why on stderr, before any request (the endpoint
// answers nothing).
func TestBadInput(t *testing.T) {
	hermetic(t)
	g := []string{"--endpoint-url", "http://127.0.0.1:1", "--region", "us-east-1", "--table", "inbox"}
	user := []string{"--tenant", "acme", "--inbox", "alerts", "--user", "ann"}
	for _, c := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no command", nil, "inbox: no command"},
		{"unknown command", with(g, "frobnicate"), `inbox: unknown command "frobnicate"`},
		{"no table", slices.Concat([]string{"--region", "us-east-1", "counts"}, user), "inbox: counts: no table: pass --table or set INBOX_TABLE"},
		{"bad output", slices.Concat(g, []string{"-o", "yaml", "counts"}, user), `inbox: counts: --output "yaml": want json or table`},
		{"bad output after the command", slices.Concat(g, []string{"counts", "--output", "xml"}, user), `--output "xml"`},
		{"no region", slices.Concat([]string{"--table", "inbox", "counts"}, user), "inbox: counts: no region"},
		{"missing tenant", with(g, "feed", "--inbox", "alerts", "--user", "ann"), "inbox: feed: missing --tenant"},
		{"missing user", with(g, "counts", "--tenant", "acme", "--inbox", "alerts"), "inbox: counts: missing --user"},
		{"invalid user", with(g, "counts", "--tenant", "acme", "--inbox", "alerts", "--user", "a#b"), `inbox: counts: invalid key: user "a#b"`},
		{"reserved user", with(g, "feed", "--tenant", "acme", "--inbox", "alerts", "--user", inbox.PublicGroup), "is reserved"},
		{"invalid tenant", with(g, "recount", "--tenant", "ac*me", "--inbox", "alerts", "--all"), `invalid key: tenant "ac*me"`},
		{"invalid group", slices.Concat(g, []string{"counts", "--group", "a?b"}, user), `invalid key: group "a?b"`},
		{"invalid category", slices.Concat(g, []string{"feed", "--category", "*"}, user), "invalid key: category"},
		{"limit too large", slices.Concat(g, []string{"feed", "--limit", "500"}, user), "--limit 500: want 1 to 100"},
		{"bad cursor", slices.Concat(g, []string{"feed", "--cursor", "garbage"}, user), "inbox: feed: --cursor: invalid cursor"},
		{"unknown flag", slices.Concat(g, []string{"feed", "--bogus"}, user), "inbox: feed: flag provided but not defined: -bogus"},
		{"extra argument", slices.Concat(g, []string{"counts"}, user, []string{"extra"}), `inbox: counts: unexpected argument "extra"`},
		{"all and user", slices.Concat(g, []string{"recount", "--all"}, user), "inbox: recount: --all recounts every user"},
		{"parallel without all", slices.Concat(g, []string{"recount", "--parallel", "3"}, user), "--parallel goes with --all"},
		{"parallel out of range", with(g, "recount", "--tenant", "acme", "--inbox", "alerts", "--all", "--parallel", "0"), "--parallel 0: want 1 to 64"},
		{"bad interval", with(g, "stream", "--interval", "0s"), "--interval 0s"},
		{"bad start", with(g, "stream", "--from", "yesterday"), `--from "yesterday"`},
		{"bad consumer", with(g, "stream", "--consumer", "a#b"), "invalid key"},
		{"config without inbox", with(g, "config", "--tenant", "acme"), "missing --inbox"},
		{"set-tenant bad ttl", with(g, "set-tenant", "--tenant", "acme", "--ttl", "forever"), `invalid ttl: "forever"`},
		{"set-tenant invalid tenant", with(g, "set-tenant", "--tenant", "a#b"), `invalid key: tenant "a#b"`},
		{"set-inbox bad ttl pair", with(g, "set-inbox", "--tenant", "acme", "--inbox", "alerts", "--ttl", "7d"), "want category=TTL"},
		{"get without id", with(g, "get", "--tenant", "acme", "--inbox", "alerts"), "missing --id"},
		{"get user and group", with(g, "get", "--tenant", "acme", "--inbox", "alerts", "--id", "x", "--user", "ann", "--group", "g"), "at most one of --user and --group"},
		{"get bad id", with(g, "get", "--tenant", "acme", "--inbox", "alerts", "--id", "a#b"), "--id"},
		{"publish without users", with(g, "publish", "--tenant", "acme", "--inbox", "alerts", "--title", "x"), "missing --user"},
		{"publish bad body", with(g, "publish", "--tenant", "acme", "--inbox", "alerts", "--user", "ann", "--body", "{"), "--body: not JSON"},
		{"broadcast bad body", with(g, "broadcast", "--tenant", "acme", "--inbox", "alerts", "--body", "[1,"), "--body: not JSON"},
		{"redact id and host id", with(g, "redact", "--tenant", "acme", "--inbox", "alerts", "--id", "x", "--host-id", "y"), "one of --id and --host-id"},
		{"redact neither", with(g, "redact", "--tenant", "acme", "--inbox", "alerts"), "one of --id and --host-id"},
		{"preferences without user", with(g, "preferences", "--tenant", "acme", "--inbox", "alerts"), "missing --user"},
		{"mute without set", slices.Concat(g, []string{"preferences", "--mute", "devs"}, user), "--mute, --mute-category, --opt-out and --mute-thread go with --set"},
		{"mute thread without set", slices.Concat(g, []string{"preferences", "--mute-thread", "ann-bob"}, user), "--mute, --mute-category, --opt-out and --mute-thread go with --set"},
		{"mute invalid thread", slices.Concat(g, []string{"preferences", "--set", "--mute-thread", "a#b"}, user), `--mute-thread: invalid key: muted thread "a#b"`},
		{"mute thread twice", slices.Concat(g, []string{"preferences", "--set", "--mute-thread", "x", "--mute-thread", "x"}, user), `--mute-thread: invalid input: thread "x" muted twice`},
		{"mute invalid group", slices.Concat(g, []string{"preferences", "--set", "--mute", "a#b"}, user), `--mute: invalid key: muted group "a#b"`},
		{"mute everyone", slices.Concat(g, []string{"preferences", "--set", "--mute", inbox.PublicGroup}, user), "--mute: invalid key"},
		{"mute twice", slices.Concat(g, []string{"preferences", "--set", "--mute", "devs", "--mute", "devs"}, user), `--mute: invalid input: group "devs" muted twice`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := cli(t, c.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", r.code, r.stderr, c.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	hermetic(t)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"Usage: inbox [global flags] <command>", "create-table", "recount", "stream", "-o, --output format"}},
		{[]string{"help"}, []string{"Commands:"}},
		{[]string{"help", "stream"}, []string{"Usage: inbox [global flags] stream [--from P] [--consumer C] [--interval D]", "--interval duration", "--from string"}},
		{[]string{"feed", "-h"}, []string{"Usage: inbox [global flags] feed --tenant T", "--cursor", "--endpoint-url URL"}},
		{[]string{"recount", "--help"}, []string{"--all", "--parallel int"}},
	} {
		r := cli(t, c.args...)
		if r.code != exitOK {
			t.Errorf("%q: exit %d, want 0", c.args, r.code)
		}
		for _, w := range c.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%q: usage lacks %q:\n%s", c.args, w, r.stdout)
			}
		}
	}
}

// TestOTel checks that --otel writes the library's OpenTelemetry spans
// and, at exit, its metrics to stderr, a JSON object a line: a recount's
// span, its Store calls' spans under it and their DynamoDB requests'
// client spans under those, and the counter it repaired in
// inbox.recount.repaired; no user ID. It does not go with --log-ops.
func TestOTel(t *testing.T) {
	f := newFixture(t)
	const user = "user-7f3a91"
	f.publish(t, f.scope, []string{user}, inbox.Draft{Title: "Invoice"})
	f.bump(t, f.scope.User(user).Partition(), 2)
	r := cli(t, with(f.g, "recount", "--tenant", "acme", "--inbox", "alerts", "--user", user, "--otel")...).ok(t)
	type span struct {
		Name        string
		SpanContext struct{ SpanID string }
		Parent      struct{ SpanID string }
		SpanKind    int
		Attributes  []struct {
			Key   string
			Value struct{ Value any }
		}
	}
	type point struct {
		Value float64
		Count int
	}
	var spans []span
	metrics := map[string][]point{}
	for line := range strings.Lines(r.stderr) {
		var obj struct {
			span
			ScopeMetrics []struct {
				Metrics []struct {
					Name string
					Data struct{ DataPoints []point }
				}
			}
		}
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("stderr line %q is not JSON: %v", line, err)
		}
		if obj.Name != "" {
			spans = append(spans, obj.span)
		}
		for _, sm := range obj.ScopeMetrics {
			for _, m := range sm.Metrics {
				metrics[m.Name] = append(metrics[m.Name], m.Data.DataPoints...)
			}
		}
	}
	parent := map[string]string{} // span ID -> its parent's name
	byID := map[string]span{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID] = s
	}
	var recount *span
	calls, requests := 0, 0
	for _, s := range spans {
		parent[s.SpanContext.SpanID] = byID[s.Parent.SpanID].Name
		switch {
		case s.Name == "inbox.Recount":
			recount = &s
		case strings.HasPrefix(s.Name, "inbox.store."):
			if byID[s.Parent.SpanID].Name == "inbox.Recount" {
				calls++
			}
		case s.SpanKind == 3: // client
			if strings.HasSuffix(s.Name, " "+f.table) && strings.HasPrefix(byID[s.Parent.SpanID].Name, "inbox.store.") {
				requests++
			}
		}
	}
	if recount == nil || calls == 0 || requests < calls {
		t.Fatalf("spans: Recount %v, %d Store calls under it, %d DynamoDB requests under those; want one, some, one a call or more:\n%s", recount != nil, calls, requests, r.stderr)
	}
	repaired := false
	for _, a := range recount.Attributes {
		repaired = repaired || a.Key == "inbox.recount.repaired" && a.Value.Value == 1.0
	}
	if !repaired {
		t.Errorf("the Recount span's attributes %+v; want inbox.recount.repaired 1", recount.Attributes)
	}
	if p := metrics["inbox.recount.repaired"]; len(p) != 1 || p[0].Value != 1 {
		t.Errorf("inbox.recount.repaired %+v, want 1", p)
	}
	if p := metrics["inbox.operation.duration"]; len(p) != 1 || p[0].Count != 1 {
		t.Errorf("inbox.operation.duration %+v, want the Recount's", p)
	}
	if strings.Contains(r.stderr, user) {
		t.Errorf("stderr names the user:\n%s", r.stderr)
	}
	if r := cli(t, with(f.g, "counts", "--tenant", "acme", "--inbox", "alerts", "--user", user, "--otel", "--log-ops")...); r.code != exitUsage || !strings.Contains(r.stderr, "--log-ops and --otel") {
		t.Errorf("--otel --log-ops: exit %d, stderr %q; want a usage error", r.code, r.stderr)
	}
}

// TestLogOps checks that --log-ops logs the library's operations to
// stderr, one JSON line each, with the counters a recount repaired, and
// no user ID.
func TestLogOps(t *testing.T) {
	f := newFixture(t)
	const user = "user-7f3a91"
	f.publish(t, f.scope, []string{user}, inbox.Draft{Title: "Invoice"})
	f.bump(t, f.scope.User(user).Partition(), 2)
	r := cli(t, with(f.g, "recount", "--tenant", "acme", "--inbox", "alerts", "--user", user, "--log-ops")...).ok(t)
	var logged []map[string]any
	for line := range strings.Lines(r.stderr) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("stderr line %q is not JSON: %v", line, err)
		}
		logged = append(logged, rec)
	}
	if len(logged) != 1 || logged[0]["msg"] != "inbox: operation" || logged[0]["op"] != "Recount" ||
		logged[0]["repaired"] != 1.0 || logged[0]["outcome"] != "ok" || logged[0]["requests"].(float64) < 4 {
		t.Errorf("logged %v, want one Recount that repaired 1 counter", logged)
	}
	if strings.Contains(r.stderr, user) {
		t.Errorf("stderr names the user:\n%s", r.stderr)
	}
	if r := cli(t, with(f.g, "counts", "--tenant", "acme", "--inbox", "alerts", "--user", user)...).ok(t); r.stderr != "" {
		t.Errorf("without --log-ops, stderr %q", r.stderr)
	}
}
