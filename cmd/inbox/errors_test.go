package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"testing"

	"github.com/stak/inbox"
)

// TestUsageErrorsKeepTheirType runs commands whose flags the library
// refuses, below run, and checks that each error is a usage error that
// still is the library's (errors.Is), before any request (the endpoint
// answers nothing).
func TestUsageErrorsKeepTheirType(t *testing.T) {
	hermetic(t)
	g := globals{endpoint: "http://127.0.0.1:1", region: "us-east-1", table: "inbox", output: outputJSON}
	for _, c := range []struct {
		name  string
		setup func(*flag.FlagSet) func(context.Context, *env) error
		args  []string
		want  error
	}{
		{"feed bad user", setupFeed, []string{"--tenant", "acme", "--inbox", "alerts", "--user", "a#b"}, inbox.ErrInvalidKey},
		{"feed bad category", setupFeed, []string{"--tenant", "acme", "--inbox", "alerts", "--user", "ann", "--category", "a*"}, inbox.ErrInvalidKey},
		{"get bad id", setupGet, []string{"--tenant", "acme", "--inbox", "alerts", "--id", "a#b"}, inbox.ErrInvalidKey},
		{"set-tenant bad ttl", setupSetTenant, []string{"--tenant", "acme", "--ttl", "forever"}, inbox.ErrInvalidTTL},
		{"preferences bad group", setupPreferences, []string{"--tenant", "acme", "--inbox", "alerts", "--user", "ann", "--set", "--mute", "a#b"}, inbox.ErrInvalidKey},
		{"stream bad consumer", setupStream, []string{"--consumer", "a#b"}, inbox.ErrInvalidKey},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			exec := c.setup(fs)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			err := exec(context.Background(), &env{globals: g, stdout: io.Discard, stderr: io.Discard})
			if !isUsage(err) || !errors.Is(err, c.want) {
				t.Errorf("error %v (usage %v); want a usage error that is %v", err, isUsage(err), c.want)
			}
		})
	}
}
