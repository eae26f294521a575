package driver

import (
	"math/big"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestParseTimeAttr: a time attribute holds a time when it is a number of
// epoch seconds within the years 1970 to 9999 (a fraction rounded down),
// and none whatever else another program wrote there.
func TestParseTimeAttr(t *testing.T) {
	for _, c := range []struct {
		number string
		want   int64
		ok     bool
	}{
		{"1700000000", 1700000000, true},
		{"0", 0, true},                     // the epoch: a time still
		{"-1", 0, false},                   // negative: 1969
		{"1700000000.5", 1700000000, true}, // JavaScript's Date.now()/1000
		{"1700000000.999999999999", 1700000000, true},
		{"0.5", 0, true},
		{"-0.5", 0, false},
		{"-0", 0, true},
		{"1.7e9", 1700000000, true},
		{"17E+8", 1700000000, true},
		{"+1700000000", 1700000000, true},
		{"0001700000000", 1700000000, true},
		{"1700000000.000", 1700000000, true},
		{"253402300799", MaxEpoch, true}, // 9999-12-31T23:59:59Z
		{"253402300799.9", MaxEpoch, true},
		{"253402300800", 0, false},  // year 10000
		{"-62135596800", 0, false},  // the zero time
		{"-1700000000", 0, false},   // 1916
		{"1700000000000", 0, false}, // milliseconds
		{"1e30", 0, false},
		{"1E+30", 0, false},
		{"-1e30", 0, false},
		{"1e999999999999", 0, false},
		{"1e-999999999999", 0, true}, // below 1: the epoch
		{"99999999999999999999999999999999999999", 0, false},
		{"", 0, false}, // missing, NULL, a string
		{"x", 0, false},
		{"1700000000x", 0, false},
		{"1.2.3", 0, false},
		{"e5", 0, false},
		{"1e", 0, false},
		{".", 0, false},
		{"--1", 0, false},
		{" 1", 0, false},
	} {
		got, ok := ParseTimeAttr(c.number)
		want := time.Time{}
		if c.ok {
			want = time.Unix(c.want, 0).UTC()
		}
		if ok != c.ok || !got.Equal(want) {
			t.Errorf("ParseTimeAttr(%q) = %v, %v; want %v, %v", c.number, got, ok, want, c.ok)
		}
		if ok && got.IsZero() {
			t.Errorf("ParseTimeAttr(%q) holds the zero time, which is no time", c.number)
		}
	}
}

// TestParseExpiryAttr: a number is an expiry, rounded up and clamped to
// what a ledger key holds; anything else is expired (the epoch).
func TestParseExpiryAttr(t *testing.T) {
	for _, c := range []struct {
		number string
		want   time.Time
	}{
		{"1700000000", time.Unix(1700000000, 0).UTC()},
		{"1700000000.5", time.Unix(1700000001, 0).UTC()},
		{"-0.5", time.Unix(0, 0).UTC()},
		{"-1", time.Unix(0, 0).UTC()},
		{"9999999999", time.Unix(MaxExpiryEpoch, 0).UTC()},
		{"1e30", time.Unix(MaxExpiryEpoch, 0).UTC()},
		{"1700000000000", time.Unix(MaxExpiryEpoch, 0).UTC()},
		{"-1e30", time.Unix(0, 0).UTC()},
		{"", time.Unix(0, 0).UTC()},
		{"x", time.Unix(0, 0).UTC()},
	} {
		if got := ParseExpiryAttr(c.number); !got.Equal(c.want) {
			t.Errorf("ParseExpiryAttr(%q) = %v, want %v", c.number, got, c.want)
		}
	}
}

// TestStoredTime: a time another program gives a record reads back as a
// Store that keeps it in epoch seconds reads it; ValidTime holds for the
// times that read back.
func TestStoredTime(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600))
	for _, c := range []struct {
		in, want time.Time
	}{
		{at, time.Unix(at.Unix(), 0).UTC()},
		{time.Time{}, time.Time{}},
		{time.Unix(0, 500).UTC(), time.Unix(0, 0).UTC()},
		{time.Date(1960, 1, 1, 0, 0, 0, 500, time.UTC), time.Time{}},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{}},
		{time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC), time.Time{}},
	} {
		if got := StoredTime(c.in); !got.Equal(c.want) || got.Location() != time.UTC {
			t.Errorf("StoredTime(%v) = %v, want %v UTC", c.in, got, c.want)
		}
		if ValidTime(c.in) != (c.in.IsZero() || !c.want.IsZero()) {
			t.Errorf("ValidTime(%v) = %v, but StoredTime reads it back as %v", c.in, ValidTime(c.in), c.want)
		}
		if s, ok := ParseTimeAttr(strconv.FormatInt(c.in.Unix(), 10)); !c.in.IsZero() && (!s.Equal(c.want) || ok == c.want.IsZero()) {
			t.Errorf("ParseTimeAttr of %v in epoch seconds = %v, %v; StoredTime says %v", c.in, s, ok, c.want)
		}
	}
}

// syntax is what decimalBounds reads; numeral those of its numerals whose
// exponent is small enough for big.Rat to check them.
var (
	syntax  = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
	numeral = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?0*[0-9]{1,3})?$`)
)

// FuzzParseTimeAttr: ParseTimeAttr and ParseExpiryAttr read exactly the
// numerals, agree with their exact value (big.Rat), and never return the
// zero time as a time.
func FuzzParseTimeAttr(f *testing.F) {
	for _, s := range []string{"0", "1700000000", "1700000000.5", "-0.5", "1e30", "1E+30", "253402300799.9", "-0.5", "-1", "x", "", "1e-5", ".5", "5.", "00012e-2", "1e0000000000000000002"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, number string) {
		got, ok := ParseTimeAttr(number)
		exp := ParseExpiryAttr(number)
		if ok && got.IsZero() {
			t.Fatalf("ParseTimeAttr(%q) is the zero time", number)
		}
		if _, _, valid := decimalBounds(number); valid != syntax.MatchString(number) {
			t.Fatalf("decimalBounds(%q) valid %v, want %v", number, valid, !valid)
		}
		if !numeral.MatchString(number) {
			return
		}
		var r big.Rat
		if _, okr := r.SetString(number); !okr {
			t.Skip() // a form big.Rat does not read ("5.")
		}
		fl := new(big.Int).Div(r.Num(), r.Denom()) // Euclidean: the floor, for a positive denominator
		ce := new(big.Int).Neg(new(big.Int).Div(new(big.Int).Neg(r.Num()), r.Denom()))
		inRange := fl.Sign() >= 0 && fl.Cmp(big.NewInt(MaxEpoch)) <= 0
		if ok != inRange || ok && got.Unix() != fl.Int64() {
			t.Fatalf("ParseTimeAttr(%q) = %v, %v; its floor is %v", number, got, ok, fl)
		}
		want := ce
		if want.Sign() < 0 {
			want = big.NewInt(0)
		}
		if want.Cmp(big.NewInt(MaxExpiryEpoch)) > 0 {
			want = big.NewInt(MaxExpiryEpoch)
		}
		if exp.Unix() != want.Int64() {
			t.Fatalf("ParseExpiryAttr(%q) = %v, want %v", number, exp, want)
		}
	})
}
