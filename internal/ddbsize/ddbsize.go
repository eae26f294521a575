// Package ddbsize computes the sizes DynamoDB counts for values, which
// both the item-size check (driver.ItemSize) and the benchmarks' AWS-billed
// capacity units rest on.
package ddbsize

import "strings"

// Number returns the bytes DynamoDB counts for the number written in
// decimal as s (an optional '-', digits, an optional fraction; no
// exponent): 1, plus one for each pair of decimal digits, the pairs
// aligned at the decimal point (as in base 100) from the first to the
// last that is not "00", plus 1 if it is negative. Zero is 1 byte.
func Number(s string) int {
	neg := strings.HasPrefix(s, "-")
	intPart, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	if len(intPart)%2 == 1 {
		intPart = "0" + intPart
	}
	if len(frac)%2 == 1 {
		frac += "0"
	}
	digits := intPart + frac
	first, last := -1, -1
	for i := 0; i+1 < len(digits); i += 2 {
		if digits[i:i+2] != "00" {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return 1 // zero
	}
	n := 1 + (last-first)/2 + 1
	if neg {
		n++
	}
	return n
}
