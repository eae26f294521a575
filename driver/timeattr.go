package driver

import (
	"strconv"
	"strings"
	"time"
)

// MaxEpoch is the latest time, in epoch seconds, a time attribute of an
// item holds: 9999-12-31T23:59:59Z, the last second a time.Time marshals
// to JSON and RFC 3339. The earliest is the epoch, 0.
const MaxEpoch = 253402300799

// ParseTimeAttr returns the time a time attribute of a message, broadcast
// or receipt item holds: readat, archivedat, deletedat, interactedat,
// snoozeduntil, deliverat, and the headers' received and delivered.
// number is the attribute as it stands, in decimal, if it is a number ("" if
// it is missing or of another type). It holds a time if it is a number of
// epoch seconds from 0 to MaxEpoch (1970 to 9999), a fraction rounded down
// to the second; ok is false for whatever else another program may write
// there (NULL, as the seeds write an unset readat, a string, a boolean, a
// negative number, a number past 9999 such as 1e30 or a time in
// milliseconds), which a Store reads as if the item had no such
// attribute: an unset mark, no snooze, no due time. It never fails a
// read. A Store's filters and conditions on such an attribute test the
// same range (a number at least 0 and below MaxEpoch+1), so that what a
// Store reads and what it queries agree.
func ParseTimeAttr(number string) (t time.Time, ok bool) {
	lo, _, valid := decimalBounds(number)
	if !valid || lo < 0 || lo > MaxEpoch {
		return time.Time{}, false
	}
	return time.Unix(lo, 0).UTC(), true
}

// ValidTime reports whether t, a time of a record, is one a Store keeps in
// a time attribute and reads back (see ParseTimeAttr): zero (none), or from
// the epoch to MaxEpoch.
func ValidTime(t time.Time) bool {
	return t.IsZero() || t.Unix() >= 0 && t.Unix() <= MaxEpoch
}

// MaxExpiryEpoch is the latest expiry, in epoch seconds, a record reads:
// the largest a ledger key holds (in the year 2286), which DynamoDB's TTL
// never reaches.
const MaxExpiryEpoch = maxLedgerEpoch

// ParseExpiryAttr returns the expiry the TTL attribute (TTLAttribute) of an
// item holds: number is the attribute in decimal if it is a number, ""
// otherwise. A number is a time in epoch seconds, a fraction rounded up
// (so that the item is expired at a second exactly when the number is not
// after it, as a Store's filter on the attribute compares it), clamped to
// the epoch and to MaxExpiryEpoch (1e30, or a time in milliseconds,
// expires in 2286), as its ledger entry's key holds it. Anything else, as
// a missing attribute, is the epoch: expired, as a Store's filter leaves
// it out. It never fails a read.
func ParseExpiryAttr(number string) time.Time {
	_, hi, valid := decimalBounds(number)
	if !valid {
		hi = 0
	}
	return time.Unix(min(max(hi, 0), MaxExpiryEpoch), 0).UTC()
}

// StoredTime returns what a Store that keeps time t of a record as a time
// attribute in epoch seconds reads back (see ParseTimeAttr): t to the
// second (rounded down), or the zero time if that is outside 0 to
// MaxEpoch. The in-memory store keeps another program's times so.
func StoredTime(t time.Time) time.Time {
	if t.IsZero() || t.Unix() < 0 || t.Unix() > MaxEpoch {
		return time.Time{}
	}
	return time.Unix(t.Unix(), 0).UTC()
}

// StoredExpiry returns what a Store that keeps expiry t of a record as
// its TTL attribute in epoch seconds reads back (see ParseExpiryAttr): t
// to the second (rounded down), clamped to the epoch and MaxExpiryEpoch.
func StoredExpiry(t time.Time) time.Time {
	return time.Unix(min(max(t.Unix(), 0), MaxExpiryEpoch), 0).UTC()
}

// decimalSaturation is the magnitude decimalBounds saturates at: far past
// any epoch second a time attribute holds.
const decimalSaturation = 1 << 62

// decimalBounds returns the greatest integer not above, and the least
// not below, number, a decimal numeral as DynamoDB holds a number: an
// optional sign, digits with an optional fraction, an optional exponent
// (1.5, -3, 1e30, 1E+30). A value beyond decimalSaturation saturates.
// ok is false for anything else. It reads the numeral exactly, never
// through a float, so that it agrees with DynamoDB's comparisons.
func decimalBounds(number string) (floor, ceil int64, ok bool) {
	s := number
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	mant, exp, hasExp := s, "", false
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp, hasExp = s[:i], s[i+1:], true
	}
	whole, frac, _ := strings.Cut(mant, ".")
	if whole+frac == "" || !isDigits(whole) || !isDigits(frac) {
		return 0, 0, false
	}
	e := 0
	if hasExp {
		eneg := false
		if exp != "" && (exp[0] == '+' || exp[0] == '-') {
			eneg, exp = exp[0] == '-', exp[1:]
		}
		if exp == "" || !isDigits(exp) {
			return 0, 0, false
		}
		if exp = strings.TrimLeft(exp, "0"); len(exp) > 6 {
			e = 1_000_000 // far past any digits a numeral has
		} else if exp != "" {
			e, _ = strconv.Atoi(exp)
		}
		if eneg {
			e = -e
		}
	}
	all := whole + frac
	digits := strings.TrimLeft(all, "0")
	if digits == "" {
		return 0, 0, true
	}
	// The value is 0.<digits> times 10 to the power point.
	point := len(whole) + e - (len(all) - len(digits))
	var n uint64
	fraction := false
	switch {
	case point > 18: // at least 10^18
		n = decimalSaturation
	case point <= 0: // below 1
		fraction = true
	default:
		for i := range point {
			n *= 10
			if i < len(digits) {
				n += uint64(digits[i] - '0')
			}
		}
		if point < len(digits) {
			fraction = strings.Trim(digits[point:], "0") != ""
		}
	}
	up := int64(0)
	if fraction {
		up = 1
	}
	if neg {
		return -int64(n) - up, -int64(n), true
	}
	return int64(n), int64(n) + up, true
}

// isDigits reports whether s holds only the digits 0 to 9 ("" does).
func isDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
