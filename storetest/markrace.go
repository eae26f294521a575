package storetest

import (
	"context"
	"sync"

	"github.com/stak/inbox/driver"
)

// markRace is a Store that runs, just before each Mark it passes on, the
// next change queued with race (if any), and hands it the marks: another
// writer's change landing between a caller's read and its write. It is
// safe for concurrent use if the Store it wraps is.
type markRace struct {
	driver.Store
	mu    sync.Mutex
	queue []func(marks []driver.Mark)
}

// race queues changes, one for each of the next Marks.
func (s *markRace) race(changes ...func(marks []driver.Mark)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, changes...)
}

// pending returns how many queued changes have not run, and drops them.
func (s *markRace) pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.queue)
	s.queue = nil
	return n
}

// Mark runs the next queued change, then passes the marks on.
func (s *markRace) Mark(ctx context.Context, marks []driver.Mark, deltas []driver.Counter) error {
	s.mu.Lock()
	var change func([]driver.Mark)
	if len(s.queue) > 0 {
		change, s.queue = s.queue[0], s.queue[1:]
	}
	s.mu.Unlock()
	if change != nil {
		change(marks)
	}
	return s.Store.Mark(ctx, marks, deltas)
}

// Namespace returns the wrapped Store's namespace ("" if it names none).
func (s *markRace) Namespace() string {
	if n, ok := s.Store.(driver.Namespacer); ok {
		return n.Namespace()
	}
	return ""
}
