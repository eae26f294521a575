package inbox

import (
	"errors"
	"testing"
	"time"

	"github.com/stak/inbox/driver"
)

func TestResolveTTL(t *testing.T) {
	day := 24 * time.Hour
	full := driver.Config{
		Tenant: &TenantSettings{TTL: "10d"},
		Inbox:  &InboxConfig{TTL: map[string]string{"billing": "3d", DefaultTTLKey: "5d"}},
	}
	tests := []struct {
		name string
		msg  time.Duration
		cat  string
		cfg  Config
		want time.Duration
	}{
		{"message wins", 2 * time.Hour, "billing", full, 2 * time.Hour},
		{"message capped", 1000 * day, "", full, MaxTTL},
		{"inbox category", 0, "billing", full, 3 * day},
		{"inbox default", 0, "other", full, 5 * day},
		{"inbox default, no category", 0, "", full, 5 * day},
		{"tenant", 0, "billing", Config{Tenant: &TenantSettings{TTL: "10d"}, Inbox: &InboxConfig{}}, 10 * day},
		{"tenant only", 0, "", Config{Tenant: &TenantSettings{TTL: "9999d"}}, MaxTTL},
		{"fallback", 0, "billing", Config{}, DefaultTTL},
		{"empty tenant ttl", 0, "", Config{Tenant: &TenantSettings{Title: "x"}}, DefaultTTL},
	}
	for _, tt := range tests {
		got, err := resolveTTL(tt.msg, tt.cat, tt.cfg)
		if err != nil || got != tt.want {
			t.Errorf("%s: resolveTTL = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	if _, err := resolveTTL(0, "", Config{Tenant: &TenantSettings{TTL: "30x"}}); !errors.Is(err, ErrInvalidTTL) {
		t.Errorf("bad stored ttl: %v", err)
	}
}
