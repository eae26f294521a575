package memstore

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestSortedSet checks a sortedSet against a sorted slice, through random
// inserts and deletes that split and empty chunks, and reads from random
// bounds both ways.
func TestSortedSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s sortedSet
	var want []string
	for step := range 20000 {
		v := strconv.Itoa(rng.IntN(3000))
		if rng.IntN(3) > 0 {
			i, found := slices.BinarySearch(want, v)
			if got := s.insert(v); got == found {
				t.Fatalf("step %d: insert(%s) = %v, it was there: %v", step, v, got, found)
			}
			if !found {
				want = slices.Insert(want, i, v)
			}
		} else {
			i, found := slices.BinarySearch(want, v)
			if got := s.remove(v); got != found {
				t.Fatalf("step %d: remove(%s) = %v, want %v", step, v, got, found)
			}
			if found {
				want = slices.Delete(want, i, i+1)
			}
		}
		if s.len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", step, s.len(), len(want))
		}
		if step%97 != 0 {
			continue
		}
		bound := strconv.Itoa(rng.IntN(3100))
		if rng.IntN(10) == 0 {
			bound = ""
		}
		var down, up []string
		s.descend(bound, func(v string) bool { down = append(down, v); return true })
		s.ascend(bound, func(v string) bool { up = append(up, v); return true })
		var wantDown, wantUp []string
		for i := len(want) - 1; i >= 0; i-- {
			if bound == "" || want[i] < bound {
				wantDown = append(wantDown, want[i])
			}
		}
		for _, v := range want {
			if v >= bound {
				wantUp = append(wantUp, v)
			}
		}
		if !slices.Equal(down, wantDown) || !slices.Equal(up, wantUp) {
			t.Fatalf("step %d: below %q %v, want %v; from it %v, want %v", step, bound, down, wantDown, up, wantUp)
		}
	}
	var nilSet *sortedSet
	nilSet.descend("", func(string) bool { t.Fatal("a nil set yields"); return false })
	if nilSet.len() != 0 {
		t.Fatal("a nil set has strings")
	}
}
