package driver

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

// TestValueSize pins the sizes DynamoDB Local reported for each kind of
// value (by the largest string that still fit beside it in a 400 KB item).
func TestValueSize(t *testing.T) {
	for _, c := range []struct {
		v    any
		want int
	}{
		{0.0, 1}, {1.0, 2}, {12.0, 2}, {123.0, 3}, {1234.0, 3}, {12345.0, 4},
		{-1.0, 3}, {-12.0, 3}, {-123.0, 4}, {-1234.0, 4},
		{1.5, 3}, {-1.5, 4}, {1e100, 2}, {-1e100, 3}, {0.001, 2}, {100.0, 2}, {1e6, 2},
		{true, 1}, {nil, 1}, {"é", 2},
		{map[string]any{}, 3}, {map[string]any{"a": "x"}, 6}, {map[string]any{"a": "x", "b": "y"}, 9},
		{[]any{}, 3}, {[]any{"x"}, 5}, {[]any{"x", "y"}, 7}, {[]any{1.0, 2.0}, 9}, {[]any{[]any{}}, 7},
		{map[string]any{"a": map[string]any{}}, 8},
	} {
		if got := valueSize(c.v); got != c.want {
			t.Errorf("valueSize(%#v) = %d, want %d", c.v, got, c.want)
		}
	}
}

func TestNormalizeBody(t *testing.T) {
	nest := func(depth int, list bool) any {
		var v any = "x"
		for range depth {
			if list {
				v = []any{v}
			} else {
				v = map[string]any{"k": v}
			}
		}
		return v
	}
	for _, c := range []struct {
		name string
		body any
		ok   bool
	}{
		{"objects 30 deep", nest(30, false), true},
		{"objects 31 deep", nest(31, false), false},
		{"arrays 30 deep", nest(30, true), true},
		{"arrays 31 deep", nest(31, true), false},
		{"largest number", math.Nextafter(1e126, 0), true},
		{"number 1e126", 1e126, false},
		{"negative 1e126", -1e126, false},
		{"smallest number", 1e-130, true},
		{"number 1e-131", 1e-131, false},
		{"just below 1e-130", math.Nextafter(1e-130, 0), false},
		{"float64's largest", math.MaxFloat64, false},
		{"zero", 0.0, true},
		{"empty key", map[string]any{"": 1}, false},
		{"empty key deep", map[string]any{"a": []any{map[string]any{"": 1}}}, false},
		{"longest key", map[string]any{strings.Repeat("é", MaxBodyKeyLen/2): 1}, true},
		{"key a byte longer", map[string]any{"a": []any{map[string]any{strings.Repeat("k", MaxBodyKeyLen+1): 1}}}, false},
		{"2^53", int64(1 << 53), true},
		{"2^53+1, not a float64", int64(1<<53 + 1), false},
		{"uint64's largest", uint64(math.MaxUint64), false},
		{"0.1", 0.1, true},
		{"exact json number", json.Number("0.25"), true},
		{"exact json number not as strconv writes it", json.Number("2.50"), true},
		{"1e-7, which encoding/json and strconv write otherwise", 1e-7, true},
		{"json number beyond 2^53 not as strconv writes it", json.Number("9007199254740993.0"), false},
		{"json number beyond float64", json.Number("1.00000000000000000001"), false},
		{"invalid UTF-8 string", "a\xffb", false},
	} {
		_, err := NormalizeBody(c.body)
		if c.ok && err != nil || !c.ok && !errors.Is(err, ErrInvalidInput) {
			t.Errorf("NormalizeBody(%s) = %v, want ok %v (else ErrInvalidInput)", c.name, err, c.ok)
		}
	}
}

// TestValidateRecordReservesRoom: a record fits only with room for the
// attributes later marks add, and negative numbers count their sign.
func TestValidateRecordReservesRoom(t *testing.T) {
	p := Partition{Tenant: "acme", Inbox: "alerts", User: "ann"}
	rec := Record{Partition: p, Message: Message{ID: "01ARZ3NDEKTSV4RRFFQ69G5FAV", Audience: Audience{Kind: AudienceUsers, UIDs: []string{"ann"}}}}
	rec.Entry = LedgerSK(rec.Message.ExpiresAt, rec.Message.ID, "t")
	base := ItemSize(rec)
	rec.Message.Title = strings.Repeat("x", MaxItemSize-itemReserve-base)
	if err := ValidateRecord(rec); err != nil {
		t.Errorf("a record of %d bytes (the limit less the reserve): %v", ItemSize(rec), err)
	}
	rec.Message.Title += "x"
	if err := ValidateRecord(rec); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a record a byte over: %v, want ErrTooLarge", err)
	}
	positive, negative := make([]any, 1000), make([]any, 1000)
	for i := range positive {
		positive[i], negative[i] = 1.0, -1.0
	}
	if d := valueSize(negative) - valueSize(positive); d != 1000 {
		t.Errorf("1000 negative numbers cost %d bytes more than positive ones, want 1000", d)
	}
}
