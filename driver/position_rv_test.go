package driver_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stak/inbox/driver"
)

// TestRVPositionTimeRange: a position at a time no time attribute holds
// (before 1970, after 9999), or with such an earlier step, is none a
// Store keeps: the marks its write-out makes would carry that time, which
// a Store reads back as no read.
func TestRVPositionTimeRange(t *testing.T) {
	user := driver.Partition{Tenant: "t", Inbox: "i", User: "ann"}
	for _, pos := range []driver.Position{
		{Bound: idAt(100), At: time.Unix(-100, 0)},
		{Bound: idAt(100), At: time.Unix(driver.MaxEpoch+1, 0)},
		{Bound: idAt(100), At: time.Unix(1000, 0), Earlier: driver.EncodeSteps([]driver.Step{{Bound: idAt(50), At: time.Unix(-1, 0)}})},
		{Bound: idAt(100), At: time.Unix(1000, 0), Earlier: driver.EncodeSteps([]driver.Step{{Bound: idAt(50), At: time.Unix(driver.MaxEpoch+1, 0)}})},
	} {
		c := driver.Counter{Partition: user, Thread: "chat", Covered: true, Position: pos}
		if err := driver.ValidateCounter(c); !errors.Is(err, driver.ErrInvalidInput) {
			t.Errorf("ValidateCounter(position %+v) = %v, want ErrInvalidInput", pos, err)
		}
		mk := driver.Mark{Key: driver.Key{Partition: user}, Now: time.Unix(2000, 0), Versioned: true, Version: 1, Cover: &driver.CoverChange{Thread: "chat", To: pos}}
		if err := driver.ValidateMark(mk); !errors.Is(err, driver.ErrInvalidInput) {
			t.Errorf("ValidateMark(cover mark to %+v) = %v, want ErrInvalidInput", pos, err)
		}
	}
}
