package main

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The walkthrough is deterministic: a fixed clock and seeded entropy give
// the same IDs, times and counts on every run.
const wantOutput = `published 01JP9Y3FM0V63QXKKD6T5AR6KF to [ann bob]
published 01JP9Y5A7086FCC9Y7DCDZP7X3 to [ann]
broadcast 01JP9Y74T0FH0T27N4DBEPMJ6R to everyone
broadcast 01JP9Y8ZD0JHT4TBJPDY6XTY7K to group admins

ann's inbox:
  09:03  unread  group     ops       Deploy of v2.3 at 17:00
  09:02  unread  broadcast news      Maintenance Saturday 22:00 UTC
  09:01  unread  direct    security  New sign-in from Firefox on Linux
  09:00  unread  direct    billing   Invoice 2025-03 is ready
ann read the invoice and the maintenance notice

ann's inbox:
  09:03  unread  group     ops       Deploy of v2.3 at 17:00
  09:02  read    broadcast news      Maintenance Saturday 22:00 UTC
  09:01  unread  direct    security  New sign-in from Firefox on Linux
  09:00  read    direct    billing   Invoice 2025-03 is ready

ann: total 4, read 2, unread 2
  billing   total 1, read 1, unread 0
  news      total 1, read 1, unread 0
  ops       total 1, read 0, unread 1
  security  total 1, read 0, unread 1

bob: total 2, read 0, unread 2
  billing   total 1, read 0, unread 1
  news      total 1, read 0, unread 1
`

func TestRun(t *testing.T) {
	for i := range 2 { // twice: nothing carries over between runs
		var out strings.Builder
		if err := run(context.Background(), &out); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if diff := cmp.Diff(wantOutput, out.String()); diff != "" {
			t.Errorf("run %d: output mismatch (-want +got):\n%s", i, diff)
		}
	}
}
