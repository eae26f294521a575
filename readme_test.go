package inbox_test

import (
	"path/filepath"
	"testing"

	"github.com/stak/inbox/internal/readmecheck"
)

// TestReadmeExampleCompiles type-checks the Go example under "## Use" in
// README.md against the package as it is: it is wrapped in a function, in
// a file that exists only in a go build overlay of internal/ddblocal, and
// vetted there, so nothing is written to the repository.
func TestReadmeExampleCompiles(t *testing.T) {
	code := readmecheck.Snippet(t, "README.md", "Use")
	src := `package ddblocal

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stak/inbox"
	"github.com/stak/inbox/dynamo"
)

func readmeExample(ctx context.Context, secret []byte) error {
` + code + `	_, _, _ = page, changed, counts
	return err
}
`
	readmecheck.Vet(t, "./internal/ddblocal", filepath.Join("internal", "ddblocal", "readme_example.go"), src)
}
