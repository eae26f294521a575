package inbox

import "github.com/stak/inbox/driver"

// Scope names one inbox of one tenant: the driver package's Scope, where
// its methods are documented.
type Scope = driver.Scope

// User is one user's inbox: a user ID within a Scope, and the groups the
// user belongs to (see User, which documents its rules).
type User = driver.User

// Partition is the unit a Store keeps records and counters in: one user's
// partition, or a shared one (everyone's in an inbox, or a group's). Only
// Inbox.RecountPartition takes one; see Partition.
type Partition = driver.Partition

// PublicGroup is the reserved group of everyone in an inbox: a broadcast
// to everyone is stored once in its partition. It is not a user ID, and a
// User need not list it: everyone is in it.
const PublicGroup = driver.PublicGroup

// MaxKeyLen is the longest tenant, inbox, user, group or category key, in
// bytes.
const MaxKeyLen = driver.MaxKeyLen

// MaxGroups is the most groups a User may list.
const MaxGroups = driver.MaxGroups
