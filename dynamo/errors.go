package dynamo

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stak/inbox/driver"
)

// This file is the one place where DynamoDB's errors become the inbox
// package's sentinel errors, and where the Store decides which errors are
// worth retrying beyond the SDK's own rules.

// Cancellation reason codes of a TransactionCanceledException, as the
// TransactWriteItems API reference lists them.
const (
	reasonNone            = "None"
	reasonConditionFailed = "ConditionalCheckFailed"
	reasonConflict        = "TransactionConflict"
	reasonThrottling      = "ThrottlingError"
	reasonThroughput      = "ProvisionedThroughputExceeded"
	reasonValidation      = "ValidationError"
)

// onFail says what a failed condition on one item of a request means: it
// returns the error to report, given the item as it was before the request
// (nil when the item did not exist or the request did not ask for it).
type onFail func(old map[string]types.AttributeValue) error

// txError maps the error of a TransactWriteItems call whose items' failed
// conditions mean what meanings says (by item index; nil entries have no
// condition). The first item whose condition failed decides the error (a
// receipts' hint's failure names every hint whose condition failed: see
// withHintsFailed); a
// cancellation for a validation error is ErrTooLarge (an item over the
// size limit) or ErrInvalidInput; one cancelled by throttling alone also
// matches ErrThrottled; any other error is returned wrapped (see opError),
// with op naming the operation.
func txError(op string, err error, meanings []onFail) error {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for i, r := range tce.CancellationReasons {
			if aws.ToString(r.Code) == reasonConditionFailed && i < len(meanings) && meanings[i] != nil {
				return withHintsFailed(meanings[i](r.Item), tce.CancellationReasons[i+1:], meanings[i+1:])
			}
		}
		for _, r := range tce.CancellationReasons {
			if aws.ToString(r.Code) == reasonValidation {
				return fmt.Errorf("dynamo: %s: %w: %w", op, validationSentinel(aws.ToString(r.Message)), err)
			}
		}
		if isThrottledCancellation(err) {
			return fmt.Errorf("dynamo: %s: %w: %w", op, driver.ErrThrottled, err)
		}
	}
	return opError(op, err)
}

// validationSentinel returns the inbox error a DynamoDB validation error
// with message msg means: ErrTooLarge for an item over the size limit,
// else ErrInvalidInput.
func validationSentinel(msg string) error {
	if strings.Contains(strings.ToLower(msg), "item size") {
		return driver.ErrTooLarge
	}
	return driver.ErrInvalidInput
}

// condError maps the error of a single-item conditional write: a failed
// condition means what meaning says.
func condError(op string, err error, meaning onFail) error {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return meaning(ccf.Item)
	}
	return opError(op, err)
}

// opError wraps any other error of operation op. A ValidationException
// (DynamoDB refused the request as written, also inside a transaction,
// where it does not cancel but refuses the whole call) also matches
// driver.ErrTooLarge for an item over the size limit, else
// driver.ErrInvalidInput.
//
// A throttling error (after the client's retries) also matches
// driver.ErrThrottled.
func opError(op string, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		switch code := api.ErrorCode(); {
		case code == "ValidationException":
			return fmt.Errorf("dynamo: %s: %w: %w", op, validationSentinel(api.ErrorMessage()), err)
		case throttlingCodes[code]:
			return fmt.Errorf("dynamo: %s: %w: %w", op, driver.ErrThrottled, err)
		}
	}
	if errors.Is(err, errUnprocessed) {
		return fmt.Errorf("dynamo: %s: %w: %w", op, driver.ErrThrottled, err)
	}
	return fmt.Errorf("dynamo: %s: %w", op, err)
}

// throttlingCodes are the error codes with which DynamoDB refuses a
// request for lack of capacity.
var throttlingCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
}

// isThrottledCancellation reports whether err is a cancelled transaction
// that throttling got in the way of: every cancellation reason is None,
// ThrottlingError or ProvisionedThroughputExceeded, and at least one is
// not None.
func isThrottledCancellation(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	throttled := false
	for _, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case reasonNone, "":
		case reasonThrottling, reasonThroughput:
			throttled = true
		default:
			return false
		}
	}
	return throttled
}

// isRetryableCancellation reports whether err is a cancelled transaction
// that only throttling or another transaction got in the way of: every
// cancellation reason is None, TransactionConflict, ThrottlingError or
// ProvisionedThroughputExceeded, and at least one is not None. Trying it
// again may succeed; a failed condition or a validation error will not.
func isRetryableCancellation(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	retry := false
	for _, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case reasonNone, "":
		case reasonConflict, reasonThrottling, reasonThroughput:
			retry = true
		default:
			return false
		}
	}
	return retry
}
