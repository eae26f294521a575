package memstore

import (
	"slices"
	"sort"
)

// maxChunk bounds the strings of one chunk of a sortedSet.
const maxChunk = 512

// sortedSet is a set of strings in order: chunks of at most maxChunk
// sorted strings, the chunks in order, none empty. Inserting or deleting
// moves at most a chunk, and finding a place costs two binary searches,
// so that a partition of 100,000 records costs about what one of 1,000
// does, as on DynamoDB. It is guarded by the Store's mutex. The zero
// value is empty.
type sortedSet struct {
	chunks [][]string
	n      int
}

// chunkOf returns the index of the chunk where v is or would go.
func (s *sortedSet) chunkOf(v string) int {
	// The first chunk whose last string is at or above v; else the last.
	i := sort.Search(len(s.chunks), func(i int) bool { c := s.chunks[i]; return c[len(c)-1] >= v })
	return min(i, len(s.chunks)-1)
}

// insert adds v; it reports whether v was new.
func (s *sortedSet) insert(v string) bool {
	if len(s.chunks) == 0 {
		s.chunks, s.n = [][]string{{v}}, 1
		return true
	}
	i := s.chunkOf(v)
	c := s.chunks[i]
	j, found := slices.BinarySearch(c, v)
	if found {
		return false
	}
	c = slices.Insert(c, j, v)
	s.n++
	if len(c) > maxChunk {
		half := append([]string(nil), c[len(c)/2:]...)
		c = c[: len(c)/2 : len(c)/2]
		s.chunks = slices.Insert(s.chunks, i+1, half)
	}
	s.chunks[i] = c
	return true
}

// remove deletes v; it reports whether v was there.
func (s *sortedSet) remove(v string) bool {
	if len(s.chunks) == 0 {
		return false
	}
	i := s.chunkOf(v)
	c := s.chunks[i]
	j, found := slices.BinarySearch(c, v)
	if !found {
		return false
	}
	c = slices.Delete(c, j, j+1)
	s.n--
	if len(c) == 0 {
		s.chunks = slices.Delete(s.chunks, i, i+1)
	} else {
		s.chunks[i] = c
	}
	return true
}

// len returns how many strings s holds.
func (s *sortedSet) len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// descend calls f with each string below before ("" for no bound), in
// descending order, until f returns false.
func (s *sortedSet) descend(before string, f func(string) bool) {
	if s == nil || len(s.chunks) == 0 {
		return
	}
	i, j := len(s.chunks)-1, 0
	if before != "" {
		i = s.chunkOf(before)
		j, _ = slices.BinarySearch(s.chunks[i], before)
		j-- // below before
	} else {
		j = len(s.chunks[i]) - 1
	}
	for ; i >= 0; i-- {
		if j < 0 {
			if i > 0 {
				j = len(s.chunks[i-1]) - 1
			}
			continue
		}
		c := s.chunks[i]
		for ; j >= 0; j-- {
			if !f(c[j]) {
				return
			}
		}
		if i > 0 {
			j = len(s.chunks[i-1]) - 1
		}
	}
}

// ascend calls f with each string at or above from, in ascending order,
// until f returns false.
func (s *sortedSet) ascend(from string, f func(string) bool) {
	if s == nil || len(s.chunks) == 0 {
		return
	}
	i := s.chunkOf(from)
	j, _ := slices.BinarySearch(s.chunks[i], from)
	for ; i < len(s.chunks); i, j = i+1, 0 {
		for _, v := range s.chunks[i][j:] {
			if !f(v) {
				return
			}
		}
	}
}

// sets is a sortedSet per partition, made when first written.
type sets[K comparable] map[K]*sortedSet

// get returns k's set, nil if it has none (a nil set is empty to read).
func (m sets[K]) get(k K) *sortedSet { return m[k] }

// insert adds v to k's set.
func (m sets[K]) insert(k K, v string) bool {
	s := m[k]
	if s == nil {
		s = &sortedSet{}
		m[k] = s
	}
	return s.insert(v)
}

// remove deletes v from k's set, and drops the set when it is empty.
func (m sets[K]) remove(k K, v string) bool {
	s := m[k]
	if s == nil {
		return false
	}
	ok := s.remove(v)
	if s.n == 0 {
		delete(m, k)
	}
	return ok
}
