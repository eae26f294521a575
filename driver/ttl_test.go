package driver

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseTTL(t *testing.T) {
	day := 24 * time.Hour
	good := map[string]time.Duration{
		"30d": 30 * day, "300m": 300 * time.Minute, "6000s": 6000 * time.Second, "12h": 12 * time.Hour,
		"1s": time.Second, "730d": MaxTTL, "731d": MaxTTL, "9999d": MaxTTL, "99999999999999999999999d": MaxTTL,
		"18000000h": MaxTTL, "007d": 7 * day,
	}
	for s, want := range good {
		got, err := ParseTTL(s)
		if err != nil || got != want {
			t.Errorf("ParseTTL(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "d", "30", "30x", "-5d", "0s", "0d", "1.5d", "+5d", " 5d", "5d ", "5D", "5 d", "1e3s", "30dd"} {
		if _, err := ParseTTL(s); !errors.Is(err, ErrInvalidTTL) {
			t.Errorf("ParseTTL(%q) = %v, want ErrInvalidTTL", s, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (InboxConfig{TTL: map[string]string{"billing": "3d", DefaultTTLKey: "1h"}}).Validate(); err != nil {
		t.Fatal(err)
	}
	for _, ic := range []InboxConfig{
		{TTL: map[string]string{"billing": "3x"}},
		{TTL: map[string]string{"a#b": "3d"}},
		{TTL: map[string]string{"*": "3d"}},
	} {
		if err := ic.Validate(); err == nil {
			t.Errorf("%+v validated", ic)
		}
	}
	if err := (TenantSettings{TTL: "-5d"}).Validate(); !errors.Is(err, ErrInvalidTTL) {
		t.Errorf("tenant ttl -5d: %v", err)
	}
	// A config's TTLs stay within a DynamoDB item: so long a TTL, or so
	// many, is refused.
	long := strings.Repeat("0", MaxConfigTTLLen-2) + "5d"
	if err := (TenantSettings{TTL: long}).Validate(); err != nil {
		t.Errorf("tenant ttl of %d bytes: %v", len(long), err)
	}
	if err := (TenantSettings{TTL: "0" + long}).Validate(); !errors.Is(err, ErrInvalidTTL) {
		t.Errorf("tenant ttl of %d bytes: %v, want ErrInvalidTTL", len(long)+1, err)
	}
	if err := (InboxConfig{TTL: map[string]string{DefaultTTLKey: "0" + long}}).Validate(); !errors.Is(err, ErrInvalidTTL) {
		t.Errorf("inbox ttl of %d bytes: %v, want ErrInvalidTTL", len(long)+1, err)
	}
	many := InboxConfig{TTL: map[string]string{}}
	for i := range MaxInboxTTLs {
		many.TTL[fmt.Sprint("c", i)] = "5d"
	}
	if err := many.Validate(); err != nil {
		t.Errorf("%d ttls: %v", len(many.TTL), err)
	}
	many.TTL[DefaultTTLKey] = "5d"
	if err := many.Validate(); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("%d ttls: %v, want ErrInvalidInput", len(many.TTL), err)
	}
}

// FuzzParseTTL checks that ParseTTL accepts exactly a positive number and a
// unit, and never returns more than MaxTTL.
func FuzzParseTTL(f *testing.F) {
	for _, s := range []string{"30d", "300m", "6000s", "1h", "0s", "-5d", "30x", "9999d", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseTTL(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidTTL) {
				t.Fatalf("ParseTTL(%q) error %v does not match ErrInvalidTTL", s, err)
			}
			return
		}
		if d <= 0 || d > MaxTTL {
			t.Fatalf("ParseTTL(%q) = %v, outside (0, MaxTTL]", s, d)
		}
		for i := 0; i < len(s)-1; i++ {
			if s[i] < '0' || s[i] > '9' {
				t.Fatalf("ParseTTL(%q) accepted a non-digit", s)
			}
		}
	})
}
