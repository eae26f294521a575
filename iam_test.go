package inbox_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stak/inbox"
	"github.com/stak/inbox/driver"
	"github.com/stak/inbox/dynamo"
)

// tenantPolicy reads examples/iam/tenant-policy.json, the policy docs/operations.md
// gives for confining a service to one tenant, and returns its
// dynamodb:LeadingKeys patterns for tenant.
func tenantPolicy(t testing.TB, tenant string) []string {
	t.Helper()
	return forTenant(policyPatterns(t), tenant)
}

// policyPatterns reads examples/iam/tenant-policy.json and returns its
// dynamodb:LeadingKeys patterns as written, ${Tenant} in them.
func policyPatterns(t testing.TB) []string {
	t.Helper()
	raw, err := os.ReadFile("examples/iam/tenant-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Statement []struct {
			Condition map[string]map[string][]string
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("tenant-policy.json: %v", err)
	}
	if len(doc.Statement) != 1 {
		t.Fatalf("tenant-policy.json has %d statements, want 1", len(doc.Statement))
	}
	out := doc.Statement[0].Condition["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
	if len(out) == 0 {
		t.Fatal("tenant-policy.json has no dynamodb:LeadingKeys patterns")
	}
	return out
}

// forTenant returns patterns (policyPatterns) for tenant.
func forTenant(patterns []string, tenant string) []string {
	out := make([]string, len(patterns))
	for i, p := range patterns {
		out[i] = strings.ReplaceAll(p, "${Tenant}", tenant)
	}
	return out
}

// stringLike reports whether s matches pattern as IAM's StringLike does:
// case-sensitive, '*' for any run of characters (none too) and '?' for any
// one character. It matches left to right; on a mismatch the last '*'
// seen takes one more character and matching goes on after it (what an
// earlier '*' would take instead, that one can), so it allocates no table.
func stringLike(pattern, s string) bool {
	p, r := []rune(pattern), []rune(s)
	pi, ri := 0, 0
	star, taken := -1, 0 // the last '*' seen, and where its run ends in r
	for ri < len(r) {
		switch {
		case pi < len(p) && p[pi] == '*':
			star, taken = pi, ri
			pi++
		case pi < len(p) && (p[pi] == '?' || p[pi] == r[ri]):
			pi++
			ri++
		case star >= 0:
			taken++
			pi, ri = star+1, taken
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// allowed reports whether a policy with patterns allows leading key pk.
func allowed(patterns []string, pk string) bool {
	for _, p := range patterns {
		if stringLike(p, pk) {
			return true
		}
	}
	return false
}

// partitionKeys returns every partition key a tenant's inbox uses: the
// tenant's settings and configs, a user's messages and stats, the public
// partition, a host system ID's claim, and the inbox's key in the
// scheduled index (a Query of a global index is authorized by the index's
// partition key).
func partitionKeys(tenant, in, user string) []string {
	return []string{
		driver.TenantPK(tenant),
		driver.ClaimPK(inbox.Scope{Tenant: tenant, Inbox: in}, user),
		inbox.Partition{Tenant: tenant, Inbox: in, User: user}.PK(),
		inbox.Partition{Tenant: tenant, Inbox: in, Group: inbox.PublicGroup}.PK(),
		driver.ScheduledPK(inbox.Scope{Tenant: tenant, Inbox: in}),
	}
}

func TestStringLike(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"t#acme", "t#acme", true}, {"t#acme", "t#acm", false}, {"t#acme", "t#acmeX", false},
		{"t#acmeU#*", "t#acmeU#ann#alerts", true}, {"t#acmeU#*", "t#acmeU#", true},
		{"t#acmeU#*", "t#acmeUU#ann#alerts", false}, {"t#a?c", "t#abc", true}, {"t#a?c", "t#ac", false},
		{"*", "", true}, {"a*b*c", "aXbYc", true}, {"a*b*c", "aXbY", false}, {"t#ü?", "t#üé", true},
	} {
		if got := stringLike(c.p, c.s); got != c.want {
			t.Errorf("stringLike(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
}

// TestTenantPolicy checks the IAM policy of examples/iam against every
// partition key of its tenant and of tenants whose names are near it:
// since a key cannot contain '#', '*' or '?', the patterns written from a
// tenant key match that tenant's partitions and no other tenant's.
func TestTenantPolicy(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	alphabet := []rune("aUGSt#$*?-_ é ")
	randomKey := func() string {
		for {
			n := 1 + rng.IntN(6)
			var b strings.Builder
			for range n {
				b.WriteRune(alphabet[rng.IntN(len(alphabet))])
			}
			if driver.ValidateKey("key", b.String()) == nil {
				return b.String()
			}
		}
	}
	near := func(tenant string) []string {
		out := []string{tenant + "U", tenant + "G", tenant + "S", "U" + tenant, tenant + "x", tenant + " ", "G" + tenant, "S" + tenant}
		if len(tenant) > 1 {
			out = append(out, tenant[:len(tenant)-1])
		}
		return out
	}
	policy := policyPatterns(t)
	for range 2000 {
		tenant, in, user := randomKey(), randomKey(), randomKey()
		patterns := forTenant(policy, tenant)
		for _, pk := range partitionKeys(tenant, in, user) {
			if !allowed(patterns, pk) {
				t.Fatalf("tenant %q's policy %q refuses its own key %q", tenant, patterns, pk)
			}
		}
		for _, other := range append(near(tenant), randomKey(), randomKey()) {
			if other == tenant || driver.ValidateKey("tenant", other) != nil {
				continue
			}
			for _, pk := range partitionKeys(other, in, user) {
				if allowed(patterns, pk) {
					t.Fatalf("tenant %q's policy %q allows tenant %q's key %q", tenant, patterns, other, pk)
				}
			}
		}
	}
}

// TestKeysHaveNoWildcards: a key with IAM's wildcards is refused, so a
// policy written from a valid key is literal.
func TestKeysHaveNoWildcards(t *testing.T) {
	for _, k := range []string{"acme*", "*", "ac?me", "?"} {
		if err := driver.ValidateKey("tenant", k); err == nil {
			t.Errorf("ValidateKey(%q) accepted IAM wildcards", k)
		}
	}
}

// FuzzTenantPolicy: for any two valid, different tenant keys, the policy
// of one allows none of the other's partition keys.
func FuzzTenantPolicy(f *testing.F) {
	f.Add("acme", "acmeU", "alerts", "ann")
	f.Add("a", "aG", "x", "$public")
	f.Fuzz(func(t *testing.T, tenant, other, in, user string) {
		if tenant == other || driver.ValidateKey("t", tenant) != nil || driver.ValidateKey("t", other) != nil ||
			driver.ValidateKey("i", in) != nil || driver.ValidateKey("u", user) != nil {
			return
		}
		patterns := tenantPolicy(t, tenant)
		for _, pk := range partitionKeys(tenant, in, user) {
			if !allowed(patterns, pk) {
				t.Fatalf("tenant %q's policy refuses its own key %q", tenant, pk)
			}
		}
		for _, pk := range partitionKeys(other, in, user) {
			if allowed(patterns, pk) {
				t.Fatalf("tenant %q's policy allows tenant %q's key %q", tenant, other, pk)
			}
		}
	})
}

// TestTenantPolicyCoversTheIndexes: the policy grants its actions on the
// table and on each index CreateTable makes: the unread index, which
// unread-only pages query, the thread index (a thread's pages) and the
// scheduled index (Scheduled and Due).
func TestTenantPolicyCoversTheIndexes(t *testing.T) {
	raw, err := os.ReadFile("examples/iam/tenant-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Statement []struct {
			Resource []string
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Statement) != 1 {
		t.Fatalf("tenant-policy.json: %v, %d statements", err, len(doc.Statement))
	}
	table := "arn:aws:dynamodb:${Region}:${Account}:table/${Table}"
	want := map[string]bool{table: false}
	for _, ix := range []string{dynamo.DefaultUnreadIndex, dynamo.DefaultThreadIndex, dynamo.DefaultScheduledIndex} {
		want[table+"/index/"+ix] = false
	}
	for _, r := range doc.Statement[0].Resource {
		if _, ok := want[r]; ok {
			want[r] = true
		}
	}
	for r, found := range want {
		if !found {
			t.Errorf("tenant-policy.json grants nothing on %s", r)
		}
	}
}
