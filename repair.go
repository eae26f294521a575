package inbox

import "context"

// recountPageSize is how many records Recount reads per round trip.
const recountPageSize = 500

// Recount rebuilds the stats records of u's partition and of the inbox's
// public partition from the records they hold, replacing whatever the
// counters said, and returns u's counts afterwards. It is the operators'
// repair path: it reads every record of both partitions (expired ones too,
// since their removal has not yet been accounted), so its cost grows with
// them. Run it when the partitions are quiet: a write that lands between
// the read and the reset is lost from the counters until the next Recount.
func (ib *Inbox) Recount(ctx context.Context, u User) (Counts, error) {
	if err := u.Validate(); err != nil {
		return Counts{}, err
	}
	for _, p := range []Partition{u.partition(), u.Scope.public()} {
		counters, err := ib.recount(ctx, p)
		if err != nil {
			return Counts{}, err
		}
		if err := ib.store.ResetCounters(ctx, p, counters); err != nil {
			return Counts{}, err
		}
	}
	return ib.Counts(ctx, u)
}

// recount tallies the counters of p from its records.
func (ib *Inbox) recount(ctx context.Context, p Partition) ([]Counter, error) {
	deltas := counterDeltas(p, "", 0, 0) // the total always exists
	q := Query{Partition: p, Limit: recountPageSize}
	for {
		res, err := ib.store.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, r := range res.Records {
			// A record's counters are the negation of its removal's.
			for _, d := range RemovalDeltas(r) {
				d.Published, d.Read = -d.Published, -d.Read
				deltas = append(deltas, d)
			}
		}
		if res.Next == "" {
			return mergeCounters(deltas), nil
		}
		q.Before = res.Next
	}
}
