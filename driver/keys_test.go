package driver

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateKey(t *testing.T) {
	good := []string{"a", "acme", "user-1", "ü", "with space", "$public", strings.Repeat("k", MaxKeyLen)}
	for _, k := range good {
		if err := ValidateKey("k", k); err != nil {
			t.Errorf("ValidateKey(%q) = %v, want nil", k, err)
		}
	}
	bad := []string{"", "a#b", "#", strings.Repeat("k", MaxKeyLen+1), "tab\there", "nl\n", "nul\x00", "\x7f", "bad\xffutf8", "zero\u200bwidth", "line\u2028sep"}
	for _, k := range bad {
		if err := ValidateKey("k", k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ValidateKey(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
}

func TestUserValidate(t *testing.T) {
	s := Scope{Tenant: "acme", Inbox: "alerts"}
	if err := s.User("ann").Validate(); err != nil {
		t.Fatal(err)
	}
	for _, u := range []User{s.User(PublicGroup), s.User(""), s.User("a#b"), {Scope: Scope{Tenant: "", Inbox: "x"}, ID: "ann"}, {Scope: Scope{Tenant: "t", Inbox: "i#"}, ID: "ann"}} {
		if err := u.Validate(); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("%+v.Validate() = %v, want ErrInvalidKey", u, err)
		}
	}
	if err := ValidateCategory(AllCategories); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("category %q accepted", AllCategories)
	}
}

func TestPartitionKeys(t *testing.T) {
	tests := []struct {
		p    Partition
		want string
	}{
		{Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}, "t#acmeU#ann#alerts"},
		{Partition{Tenant: "acme", Inbox: "alerts", Group: PublicGroup}, "t#acmeG#$public#alerts"},
		{Partition{Tenant: "GU", Inbox: "U", User: "G"}, "t#GUU#G#U"},
	}
	for _, tt := range tests {
		if got := tt.p.PK(); got != tt.want {
			t.Errorf("PK() = %q, want %q", got, tt.want)
		}
		back, err := ParsePartitionKey(tt.want)
		if err != nil || back != tt.p {
			t.Errorf("ParsePartitionKey(%q) = %+v, %v; want %+v", tt.want, back, err, tt.p)
		}
	}
	for _, pk := range []string{"", "t#", "x#acmeU#ann#alerts", "t#acmeX#ann#alerts", "t#acmeU#$public#alerts", "t#acmeG#a*b#alerts", "t#acmeU#ann", "t#U#ann#alerts", "t#acmeU#ann#al#erts"} {
		if _, err := ParsePartitionKey(pk); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ParsePartitionKey(%q) = %v, want ErrInvalidKey", pk, err)
		}
	}
	group := Partition{Tenant: "acme", Inbox: "alerts", Group: "admins"}
	if pk := group.PK(); pk != "t#acmeG#admins#alerts" {
		t.Errorf("group PK = %q", pk)
	}
	if p, err := ParsePartitionKey("t#acmeG#admins#alerts"); err != nil || p != group {
		t.Errorf("ParsePartitionKey(group) = %+v, %v", p, err)
	}
	for _, c := range []struct{ cat, group, sk string }{
		{"", "", "c#*"}, {"billing", "", "c#billing"}, {"", "admins", "c#*#admins"}, {"billing", "admins", "c#billing#admins"},
	} {
		if got := CounterSK(c.cat, c.group); got != c.sk {
			t.Errorf("CounterSK(%q, %q) = %q, want %q", c.cat, c.group, got, c.sk)
		}
		if k, err := ParseCounterSK(c.sk); err != nil || k != (Counter{Category: c.cat, Group: c.group}) {
			t.Errorf("ParseCounterSK(%q) = %+v, %v", c.sk, k, err)
		}
	}
	for _, c := range []struct{ thread, group, sk string }{
		{"chat", "", "b#chat"}, {"chat", "admins", "b#chat#admins"}, {"chat", PublicGroup, "b#chat#$public"},
	} {
		k := Counter{Thread: c.thread, Group: c.group}
		if got := k.SK(); got != c.sk {
			t.Errorf("SK of %+v = %q, want %q", k, got, c.sk)
		}
		if got, err := ParseCounterSK(c.sk); err != nil || got != k {
			t.Errorf("ParseCounterSK(%q) = %+v, %v", c.sk, got, err)
		}
	}
	for _, sk := range []string{"c#", "x#*", "c#*#", "c#a*b", "c#*#g#h", "c#b#$x*", "b#", "b##g", "b#t#", "b#t#g#h", "b#t\x00"} {
		if _, err := ParseCounterSK(sk); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ParseCounterSK(%q) = %v, want ErrInvalidKey", sk, err)
		}
	}
}

func TestValidateMessageID(t *testing.T) {
	if err := ValidateMessageID("01ARZ3NDEKTSV4RRFFQ69G5FAV"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "01arz3ndektsv4rrffq69g5fav", "01ARZ3NDEKTSV4RRFFQ69G5FA", "81ARZ3NDEKTSV4RRFFQ69G5FAV", "01ARZ3NDEKTSV4RRFFQ69G5FA#"} {
		if err := ValidateMessageID(id); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ValidateMessageID(%q) = %v, want ErrInvalidKey", id, err)
		}
	}
}

// FuzzPartitionKey checks that any partition whose keys validate survives
// PK and ParsePartitionKey unchanged, and that no string with '#' in a key
// validates.
func FuzzPartitionKey(f *testing.F) {
	f.Add("acme", "alerts", "ann")
	f.Add("GU", "U", "$public")
	f.Add("a#b", "i", "u")
	f.Fuzz(func(t *testing.T, tenant, inbox, user string) {
		p := Partition{Tenant: tenant, Inbox: inbox, User: user}
		err := p.Validate()
		if err != nil {
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("Validate error %v does not match ErrInvalidKey", err)
			}
			return
		}
		for _, k := range []string{tenant, inbox, user} {
			if strings.ContainsAny(k, "#\x00\n") || k == "" || len(k) > MaxKeyLen {
				t.Fatalf("key %q validated", k)
			}
		}
		back, err := ParsePartitionKey(p.PK())
		if err != nil || back != p {
			t.Fatalf("round trip of %+v: %+v, %v", p, back, err)
		}
	})
}

// FuzzParsePartitionKey checks that whatever parses re-encodes to itself.
func FuzzParsePartitionKey(f *testing.F) {
	f.Add("t#acmeU#ann#alerts")
	f.Add("t#acmeG#$public#alerts")
	f.Add("t#U#U#U")
	f.Fuzz(func(t *testing.T, pk string) {
		p, err := ParsePartitionKey(pk)
		if err != nil {
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("error %v does not match ErrInvalidKey", err)
			}
			return
		}
		if p.PK() != pk {
			t.Fatalf("ParsePartitionKey(%q) = %+v, which encodes to %q", pk, p, p.PK())
		}
	})
}

func TestTimedSK(t *testing.T) {
	until := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	expires := until.Add(time.Hour)
	id := "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	entry := LedgerSK(expires, id, "tag1")
	for _, c := range []struct{ sk, want string }{
		{SnoozeSK(until, entry), "dz#1795600800#" + id + "#tag1"},
		{PendingSK(until, entry), "dq#1795600800#" + id + "#tag1"},
	} {
		if c.sk != c.want {
			t.Errorf("key = %q, want %q", c.sk, c.want)
		}
		if c.sk <= TombstoneSK("ZZZZZZZZZZZZZZZZZZZZZZZZZZ") || c.sk >= LedgerSK(time.Unix(0, 0), id, "t") {
			t.Errorf("key %q does not sort between the tombstones and the ledger", c.sk)
		}
		got, gotEntry, err := ParseTimedSK(c.sk, expires)
		if err != nil || !got.Equal(until) || gotEntry != entry {
			t.Errorf("ParseTimedSK(%q) = %v, %q, %v; want %v, %q", c.sk, got, gotEntry, err, until, entry)
		}
	}
	if SnoozeSK(until, entry) == SnoozeSK(until, LedgerSK(expires, id, "tag2")) {
		t.Error("two records at one key (two ledger entries) share a snooze key")
	}
	for _, bad := range []string{"", "dz#", "dz#1795600800", "dz#179560080#" + id + "#t", "dz#17956008x0#" + id + "#t", "dz#1795600800#not-a-ulid#t", "dz#1795600800#" + id, "dz#1795600800#" + id + "#", "e#1795600800#" + id + "#t"} {
		if _, _, err := ParseTimedSK(bad, expires); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ParseTimedSK(%q): %v, want ErrInvalidKey", bad, err)
		}
	}
}

func FuzzParseTimedSK(f *testing.F) {
	f.Add(SnoozeSK(time.Unix(1795600800, 0), LedgerSK(time.Unix(1795604400, 0), "01ARZ3NDEKTSV4RRFFQ69G5FAV", "t")))
	f.Add("dq#0000000000#x#y")
	f.Fuzz(func(t *testing.T, sk string) {
		expires := time.Unix(1795604400, 0)
		at, entry, err := ParseTimedSK(sk, expires)
		if err != nil {
			return
		}
		back := SnoozeSK(at, entry)
		if strings.HasPrefix(sk, PendingPrefix) {
			back = PendingSK(at, entry)
		}
		if back != sk {
			t.Errorf("ParseTimedSK(%q) = %v, %q; the key again is %q", sk, at, entry, back)
		}
	})
}

// TestScheduledKey: a position is <id>#<user> for a user's copy and
// <id>##<group> for a broadcast or group message; it parses back to its
// ID and user or group; one ID's positions lie together, above the bare
// ID and below the next ID; anything else is ErrInvalidKey.
func TestScheduledKey(t *testing.T) {
	s := Scope{Tenant: "acme", Inbox: "alerts"}
	id, next := "01ARZ3NDEKTSV4RRFFQ69G5FAV", "01ARZ3NDEKTSV4RRFFQ69G5FAW"
	for _, c := range []struct {
		p    Partition
		want string
	}{
		{s.User("ann").Partition(), id + "#ann"},
		{s.User("!").Partition(), id + "#!"},
		{s.Public(), id + "##$public"},
		{s.Group("ops"), id + "##ops"},
		{s.Group("~"), id + "##~"},
	} {
		pos := ScheduledKey(id, c.p)
		if pos != c.want {
			t.Errorf("ScheduledKey(%s) = %q, want %q", c.p.PK(), pos, c.want)
		}
		gotID, gotP, err := ParseScheduledKey(pos)
		if err != nil || gotID != id || gotP != (Partition{User: c.p.User, Group: c.p.Group}) {
			t.Errorf("ParseScheduledKey(%q) = %q, %+v, %v", pos, gotID, gotP, err)
		}
		if !(id < pos && pos < next) || !validScheduledBound(pos) {
			t.Errorf("position %q does not lie between %q and %q, or is no bound", pos, id, next)
		}
	}
	for _, bad := range []string{"", id, id + "#", id + "##", id + "###ops", id + "##ops#x", id + "#ann#", id + "#$public", id + "#a*", "nope#ann", "#ann"} {
		if _, _, err := ParseScheduledKey(bad); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ParseScheduledKey(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
}

// FuzzParseSortKeys checks the parsers of the sort keys a Store reads
// back from the table, which another program may have written: a key
// that parses re-encodes to itself, and one that does not is refused with
// ErrInvalidKey.
func FuzzParseSortKeys(f *testing.F) {
	for _, sk := range []string{
		ReaderSK("chat", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "ann"), "r#chat#01ARZ3NDEKTSV4RRFFQ69G5FAV#a#b", "r##01ARZ3NDEKTSV4RRFFQ69G5FAV#ann",
		LedgerSK(time.Unix(1700000000, 0), "01ARZ3NDEKTSV4RRFFQ69G5FAV", "abc"), "e#99999999999#01ARZ3NDEKTSV4RRFFQ69G5FAV#x", "e#0000000001#01ARZ3NDEKTSV4RRFFQ69G5FAV#x-y",
		CounterSK("", ""), CounterSK("news", "team"), ThreadCounterSK("chat", PublicGroup), "c#", "c#*#", "c#news#", "b#", "b#chat#",
		DayBucketSK(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)), HourBucketSK(time.Date(2026, 11, 27, 13, 0, 0, 0, time.UTC)), "cd#20261331", "k#2026112724",
		ScheduledKey("01ARZ3NDEKTSV4RRFFQ69G5FAV", Partition{User: "ann"}), ScheduledKey("01ARZ3NDEKTSV4RRFFQ69G5FAV", Partition{Group: PublicGroup}),
		"01ARZ3NDEKTSV4RRFFQ69G5FAV##", "01ARZ3NDEKTSV4RRFFQ69G5FAV###team", "01ARZ3NDEKTSV4RRFFQ69G5FAV#ann#bob",
	} {
		f.Add(sk)
	}
	f.Fuzz(func(t *testing.T, sk string) {
		check := func(what string, err error, back string) {
			t.Helper()
			switch {
			case err != nil && !errors.Is(err, ErrInvalidKey):
				t.Fatalf("%s(%q): %v does not match ErrInvalidKey", what, sk, err)
			case err == nil && back != sk:
				t.Fatalf("%s(%q) parsed, and re-encodes to %q", what, sk, back)
			}
		}
		thread, id, user, err := ParseReaderSK(sk)
		check("ParseReaderSK", err, ReaderSK(thread, id, user))
		exp, id, err := ParseLedgerSK(sk)
		back := ""
		if err == nil {
			// The tag is not returned: the key must start as the record's.
			if prefix := LedgerSK(exp, id, ""); strings.HasPrefix(sk, prefix) {
				back = sk
			}
		}
		check("ParseLedgerSK", err, back)
		c, err := ParseCounterSK(sk)
		check("ParseCounterSK", err, c.SK())
		day, err := ParseDayBucketSK(sk)
		check("ParseDayBucketSK", err, DayBucketSK(day))
		hour, err := ParseHourBucketSK(sk)
		check("ParseHourBucketSK", err, HourBucketSK(hour))
		id, p, err := ParseScheduledKey(sk)
		check("ParseScheduledKey", err, ScheduledKey(id, p))
	})
}
