package main

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The chat flows are deterministic: a fixed clock and seeded entropy give
// the same IDs, times and counts on every run. The chat list is ordered
// by last activity; a sender's ticks count who of the chat's other
// members read her message; an ephemeral message's chat keeps its place
// after the message expires, and its count drops at that instant.
const wantOutput = `
the team has 5 members; its chat's messages are stored once
ann's chats:
  ann-dave  private 09:05  dave   Got a minute?                    unread 1 of 1
  team      group   09:04  erin   Running late                     unread 3 of 3
  ann-bob   private 09:02  ann    Hi bob                           unread 1 of 2

ann scrolls the team chat:
  page 1  09:04  erin   Running late
  page 1  09:03  dave   Standup in 5
  page 2  09:01  carol  Hey everyone!

ann marked the team chat read (3 messages)
ann's chats:
  ann-dave  private 09:05  dave   Got a minute?                    unread 1 of 1
  team      group   09:04  erin   Running late                     unread 0 of 3
  ann-bob   private 09:02  ann    Hi bob                           unread 1 of 2

carol's messages in the team chat:
  09:01  Hey everyone!  ✓  seen by 1 of 4: ann 09:06
ann's messages in her chat with bob:
  09:02  Hi bob         ✓  seen by 0 of 1
bob opened the chat; ann's messages in it:
  09:02  Hi bob         ✓✓ seen by 1 of 1: bob 09:06

bob sent an ephemeral message (2 minutes)
ann's chats:
  ann-bob   private 09:07  bob    This message will self-destruct  unread 2 of 3
  ann-dave  private 09:05  dave   Got a minute?                    unread 1 of 1
  team      group   09:04  erin   Running late                     unread 0 of 3

two minutes later
ann's chats:
  ann-bob   private 09:02  ann    Hi bob                           unread 1 of 2
  ann-dave  private 09:05  dave   Got a minute?                    unread 1 of 1
  team      group   09:04  erin   Running late                     unread 0 of 3

events for ann's page (10):
  created  chat ann-bob  Hello!
  created  chat team     Hey everyone!
  created  chat ann-bob  Hi bob
  created  chat team     Standup in 5
  created  chat team     Running late
  created  chat ann-dave Got a minute?
  thread-read chat team
  thread-read chat ann-bob  by bob
  created  chat ann-bob  This message will self-destruct
  expired  chat ann-bob  This message will self-destruct
`

func TestChat(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(strings.TrimPrefix(wantOutput, "\n"), out.String()); diff != "" {
		t.Errorf("output differs (-want +got):\n%s", diff)
	}
}
