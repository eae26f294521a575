package memstore

import "fmt"

// Namespace returns a name unique to this Store among the live ones (see
// driver.Namespacer), so that Inboxes over two Stores that share one
// inbox.SharedBackend do not serve each other's snapshots.
func (s *Store) Namespace() string { return fmt.Sprintf("memstore/%p", s) }
