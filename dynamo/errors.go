package dynamo

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/stak/inbox"
)

// This file is the one place where DynamoDB's errors become the inbox
// package's sentinel errors, and where the Store decides which errors are
// worth retrying beyond the SDK's own rules.

// Cancellation reason codes of a TransactionCanceledException.
const (
	reasonConditionFailed = "ConditionalCheckFailed"
	reasonConflict        = "TransactionConflict"
)

// onFail says what a failed condition on one item of a request means: it
// returns the error to report, given the item as it was before the request
// (nil when the item did not exist or the request did not ask for it).
type onFail func(old map[string]types.AttributeValue) error

// txError maps the error of a TransactWriteItems call whose items' failed
// conditions mean what meanings says (by item index; nil entries have no
// condition). The first item whose condition failed decides the error;
// any other error is returned wrapped, with op naming the operation.
func txError(op string, err error, meanings []onFail) error {
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for i, r := range tce.CancellationReasons {
			if aws.ToString(r.Code) == reasonConditionFailed && i < len(meanings) && meanings[i] != nil {
				return meanings[i](r.Item)
			}
		}
	}
	return opError(op, err)
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

// opError wraps any other error of operation op. An item over DynamoDB's
// size limit also matches inbox.ErrTooLarge.
func opError(op string, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ValidationException" &&
		strings.Contains(strings.ToLower(api.ErrorMessage()), "item size") {
		return fmt.Errorf("dynamo: %s: %w: %w", op, inbox.ErrTooLarge, err)
	}
	return fmt.Errorf("dynamo: %s: %w", op, err)
}

// isTransactionConflict reports whether err is a cancelled transaction that
// another transaction or write got in the way of, and that no condition
// failed: trying it again may succeed.
func isTransactionConflict(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	conflict := false
	for _, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case reasonConditionFailed:
			return false
		case reasonConflict:
			conflict = true
		}
	}
	return conflict
}
