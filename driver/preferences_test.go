package driver

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// FuzzDecodePreferences: DecodePreferences takes what Encode returns of
// valid preferences back to them, and anything else (a hostile stored
// value) it refuses with ErrInvalidInput or ErrInvalidKey, returning no
// preferences; what it takes is valid and encodes back to its input.
func FuzzDecodePreferences(f *testing.F) {
	for _, s := range []string{"", "devs", "devs#ops", "?promo", "devs#?promo#?zz", "?promo#devs", "devs##ops", "?", "#", "devs#", "??a", "b#a", "?b#?a", "$public", "a#a", "?a#?a", "a b#?c.d[1]",
		// Muted threads (MutedThreadToken), and hostile forms of them.
		"??chat?", "devs#?promo#*news*#??chat?", "??chat", "??chat?#devs", "??chat?#*news*", "??b?#??a?", "??a?#??a?", "???", "??a??", "??a?b?", "??a?#"} {
		f.Add(s)
	}
	var many []string // one muted thread more than MaxMutedThreads
	for i := range MaxMutedThreads + 1 {
		many = append(many, MutedThreadToken(fmt.Sprintf("t%03d", i)))
	}
	f.Add(strings.Join(many, "#"))
	f.Fuzz(func(t *testing.T, s string) {
		p, err := DecodePreferences(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidInput) && !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("DecodePreferences(%q) = %v; want ErrInvalidInput or ErrInvalidKey", s, err)
			}
			if !p.IsZero() {
				t.Fatalf("DecodePreferences(%q) = %+v with error %v; want none", s, p, err)
			}
			return
		}
		if err := ValidatePreferences(p); err != nil {
			t.Fatalf("DecodePreferences(%q) = %+v, invalid: %v", s, p, err)
		}
		if got := p.Encode(); got != s {
			t.Fatalf("DecodePreferences(%q).Encode() = %q", s, got)
		}
		n, err := p.Normal()
		if err != nil || !n.Equal(p) {
			t.Fatalf("DecodePreferences(%q).Normal() = %+v, %v; want itself", s, n, err)
		}
	})
}

// TestPreferencesRoundTrip: Encode and DecodePreferences round-trip
// preferences as Normal leaves them, groups, categories and threads
// alike, at their limits; a category never reads as a group, nor a group
// as a category.
func TestPreferencesRoundTrip(t *testing.T) {
	var groups, cats []string
	for i := range MaxMutedGroups {
		groups = append(groups, strings.Repeat("g", MaxKeyLen-3)+string(rune('A'+i/26))+string(rune('a'+i%26))+"x")
	}
	for i := range MaxMutedCategories {
		cats = append(cats, strings.Repeat("c", MaxKeyLen-3)+string(rune('A'+i/26))+string(rune('a'+i%26))+"x")
	}
	var threads []string
	for i := range MaxMutedThreads {
		threads = append(threads, strings.Repeat("t", MaxKeyLen-3)+string(rune('A'+i/26))+string(rune('a'+i%26))+"x")
	}
	for _, p := range []Preferences{
		{},
		{MutedGroups: []string{"devs"}},
		{MutedThreads: []string{"chat"}},
		{MutedGroups: []string{"devs"}, MutedCategories: []string{"promo"}, OptedOut: []string{"news"}, MutedThreads: []string{"chat", "talk"}},
		{MutedThreads: threads},
		{MutedCategories: []string{"promo"}},
		{MutedGroups: []string{"devs", "ops"}, MutedCategories: []string{"news", "promo"}},
		{MutedGroups: groups, MutedCategories: cats},
	} {
		n, err := p.Normal()
		if err != nil {
			t.Fatalf("Normal(%+v): %v", p, err)
		}
		got, err := DecodePreferences(n.Encode())
		if err != nil || !got.Equal(n) || !slices.Equal(got.MutedGroups, n.MutedGroups) || !slices.Equal(got.MutedCategories, n.MutedCategories) ||
			!slices.Equal(got.MutedThreads, n.MutedThreads) {
			t.Errorf("DecodePreferences(Encode(%+v)) = %+v, %v", n, got, err)
		}
	}
}

// TestNormalRepeatedKey: a key given twice is ErrInvalidInput, and the
// error says what was repeated as the caller gave it: a category opted
// out of twice is not said to be muted twice.
func TestNormalRepeatedKey(t *testing.T) {
	for _, c := range []struct {
		p    Preferences
		want string
	}{
		{Preferences{MutedGroups: []string{"devs", "devs"}}, `group "devs" muted twice`},
		{Preferences{MutedCategories: []string{"promo", "promo"}}, `category "promo" muted twice`},
		{Preferences{OptedOut: []string{"promo", "promo"}}, `category "promo" opted out of twice`},
		{Preferences{MutedThreads: []string{"chat", "chat"}}, `thread "chat" muted twice`},
	} {
		_, err := c.p.Normal()
		if !errors.Is(err, ErrInvalidInput) || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("Normal(%+v) = %v; want ErrInvalidInput ending %q", c.p, err, c.want)
		}
	}
}
