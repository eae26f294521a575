package driver

import (
	"strconv"
	"testing"
)

// TestParseCountedAttr: a counted attribute reads as the set of marks it
// holds when that is a set a record of its kind can have, and as unknown
// (zero) whatever else another program wrote there.
func TestParseCountedAttr(t *testing.T) {
	read := MarksKnown | MarkedRead
	for _, c := range []struct {
		number  string
		receipt bool
		want    MarkSet
	}{
		{"1", false, MarksKnown},
		{"3", false, read},
		{"7", false, read | MarkedArchived},
		{"9", true, MarksKnown | MarkedDeleted},
		{"15", true, read | MarkedArchived | MarkedDeleted},
		{"0", false, 0},
		{"", false, 0},            // missing, or not a number
		{"9", false, 0},           // deleted, on a message
		{"2", true, 0},            // marks, not known
		{"17", true, 0},           // a bit of no mark
		{"255", true, 0},          // every bit
		{"256", false, 0},         // past a byte
		{"-1", false, 0},          // negative
		{"3.5", false, 0},         // a fraction
		{"3.0", false, 0},         // not as DynamoDB writes a whole number
		{"1e30", false, 0},        // far past a byte
		{"1E+30", true, 0},        // the same, as DynamoDB may write it
		{"x", false, 0},           // no number
		{"+3", false, 0},          // a sign
		{"00000003", false, read}, // leading zeros: the number 3 still
	} {
		if got := ParseCountedAttr(c.number, c.receipt); got != c.want {
			t.Errorf("ParseCountedAttr(%q, receipt %v) = %04b, want %04b", c.number, c.receipt, got, c.want)
		}
	}
}

// FuzzParseCountedAttr: whatever the attribute holds, it reads as zero or
// as a set of marks a record of its kind can have, the set ParseCounted
// gives for the number; never anything else.
func FuzzParseCountedAttr(f *testing.F) {
	for _, s := range []string{"0", "1", "3", "9", "15", "16", "255", "256", "-1", "1e30", "x", "3.5"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, number string, receipt bool) {
		got := ParseCountedAttr(number, receipt)
		if got != 0 && !got.Valid(receipt) {
			t.Fatalf("ParseCountedAttr(%q, %v) = %04b: no set of marks of the record", number, receipt, got)
		}
		n, err := strconv.ParseUint(number, 10, 64)
		if err != nil {
			if got != 0 {
				t.Fatalf("ParseCountedAttr(%q, %v) = %04b, want 0 for no whole number", number, receipt, got)
			}
			return
		}
		want, err := ParseCounted(n, receipt)
		if err != nil {
			want = 0
		}
		if got != want {
			t.Fatalf("ParseCountedAttr(%q, %v) = %04b, want ParseCounted's %04b", number, receipt, got, want)
		}
	})
}
