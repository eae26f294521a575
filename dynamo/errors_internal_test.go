package dynamo

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stak/inbox/driver"
)

// cancelled returns a TransactionCanceledException with these reason codes.
func cancelled(codes ...string) error {
	e := &types.TransactionCanceledException{Message: aws.String("Transaction cancelled")}
	for _, c := range codes {
		e.CancellationReasons = append(e.CancellationReasons, types.CancellationReason{Code: aws.String(c), Message: aws.String(c + " message")})
	}
	return e
}

func TestIsRetryableCancellation(t *testing.T) {
	for _, c := range []struct {
		codes []string
		want  bool
	}{
		{[]string{"TransactionConflict"}, true},
		{[]string{"ThrottlingError"}, true},
		{[]string{"None", "ThrottlingError", "None"}, true},
		{[]string{"ProvisionedThroughputExceeded", "None"}, true},
		{[]string{"TransactionConflict", "ThrottlingError"}, true},
		{[]string{"None", "None"}, false},
		{[]string{"ThrottlingError", "ConditionalCheckFailed"}, false},
		{[]string{"ConditionalCheckFailed", "TransactionConflict"}, false},
		{[]string{"ValidationError", "ThrottlingError"}, false},
		{[]string{"ItemCollectionSizeLimitExceeded", "TransactionConflict"}, false},
		{nil, false},
	} {
		if got := isRetryableCancellation(cancelled(c.codes...)); got != c.want {
			t.Errorf("isRetryableCancellation(%v) = %v, want %v", c.codes, got, c.want)
		}
	}
	if isRetryableCancellation(errors.New("other")) {
		t.Error("a plain error is a retryable cancellation")
	}
}

func TestErrorMapping(t *testing.T) {
	exists := func(map[string]types.AttributeValue) error { return driver.ErrExists }
	validation := func(msg string) error {
		return &smithy.GenericAPIError{Code: "ValidationException", Message: msg}
	}
	sizeMsg := "Item size has exceeded the maximum allowed size"
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"condition, with throttling beside it", cancelled("ThrottlingError", "ConditionalCheckFailed"), driver.ErrExists},
		{"validation reason on size", func() error {
			e := cancelled("None", "ValidationError").(*types.TransactionCanceledException)
			e.CancellationReasons[1].Message = aws.String(sizeMsg)
			return e
		}(), driver.ErrTooLarge},
		{"validation reason", cancelled("ValidationError"), driver.ErrInvalidInput},
		{"ValidationException on size", validation(sizeMsg), driver.ErrTooLarge},
		{"ValidationException on nesting", validation("Nesting Levels have exceeded supported limits"), driver.ErrInvalidInput},
		{"ValidationException on a number", validation("Number overflow. Attempting to store a number with magnitude larger than supported range"), driver.ErrInvalidInput},
	} {
		got := txError("test", c.err, []onFail{nil, exists})
		if !errors.Is(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		if c.want != driver.ErrExists && !errors.Is(got, c.err) {
			t.Errorf("%s: %v does not wrap DynamoDB's error", c.name, got)
		}
	}
}

// TestThrottledErrors checks that DynamoDB's refusals for lack of capacity,
// once the client gave up retrying, match driver.ErrThrottled, and that
// nothing else does.
func TestThrottledErrors(t *testing.T) {
	api := func(code string) error { return &smithy.GenericAPIError{Code: code, Message: code + " message"} }
	for _, c := range []struct {
		name      string
		err       error
		throttled bool
	}{
		{"provisioned throughput", opError("query", api("ProvisionedThroughputExceededException")), true},
		{"throttling", opError("query", api("ThrottlingException")), true},
		{"account request limit", opError("query", api("RequestLimitExceeded")), true},
		{"batch items left unprocessed", opError("get records", errUnprocessed), true},
		{"transaction cancelled by throttling", txError("mark", cancelled("None", "ThrottlingError"), nil), true},
		{"transaction cancelled by throughput", txError("mark", cancelled("ProvisionedThroughputExceeded"), nil), true},
		{"transaction conflict", txError("mark", cancelled("TransactionConflict", "ThrottlingError"), nil), false},
		{"validation", opError("query", api("ValidationException")), false},
		{"other", opError("query", errors.New("connection reset")), false},
	} {
		if got := errors.Is(c.err, driver.ErrThrottled); got != c.throttled {
			t.Errorf("%s: %v matches ErrThrottled: %v, want %v", c.name, c.err, got, c.throttled)
		}
	}
}
