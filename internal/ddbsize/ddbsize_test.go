package ddbsize

import "testing"

func TestNumber(t *testing.T) {
	for s, want := range map[string]int{
		"0": 1, "0.00": 1, "1": 2, "-1": 3, "99": 2, "100": 2, "101": 3,
		"0.001": 2, "123.456": 5, "-123.456": 6, "1000000": 2, "1234567": 5,
	} {
		if got := Number(s); got != want {
			t.Errorf("Number(%q) = %d, want %d", s, got, want)
		}
	}
}
