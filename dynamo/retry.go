package dynamo

import (
	"context"
	"crypto/rand"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// retryCancellations is a per-operation option for TransactWriteItems
// and TransactGetItems: the client's own retryer (its attempts, backoff
// and quota) also retries a transaction cancelled only by throttling or a
// TransactionConflict (see isRetryableCancellation), which the SDK does
// not retry by itself: DynamoDB reports throttling inside a transaction
// as a cancellation, not as a throttling error. That is safe because
// every transaction that writes carries a ClientRequestToken: an attempt
// that DynamoDB already applied is not applied again (a read changes
// nothing). There is no retry loop besides the SDK's.
func retryCancellations(o *dynamodb.Options) {
	if o.Retryer != nil {
		o.Retryer = cancellationRetryer{o.Retryer}
	}
}

// cancellationRetryer is a retryer that also deems transactions cancelled
// by throttling or conflicts retryable.
type cancellationRetryer struct{ aws.Retryer }

// IsErrorRetryable reports whether err is a retryable cancellation or
// retryable by the wrapped retryer.
func (r cancellationRetryer) IsErrorRetryable(err error) bool {
	return isRetryableCancellation(err) || r.Retryer.IsErrorRetryable(err)
}

// GetAttemptToken asks the wrapped retryer for an attempt token, as
// aws.RetryerV2.
func (r cancellationRetryer) GetAttemptToken(ctx context.Context) (func(error) error, error) {
	if v2, ok := r.Retryer.(aws.RetryerV2); ok {
		return v2.GetAttemptToken(ctx)
	}
	return r.GetInitialToken(), nil
}

// requestToken returns a new ClientRequestToken: random, so that it is
// unique to one call of a Store method, and fixed across the SDK's retries
// of that call, so that a retry after a lost response is not applied twice.
// (A token derived from the item key instead would make a second call on
// the same key within DynamoDB's ten-minute idempotency window succeed
// without effect, where the Store contract wants ErrExists, or false from
// ApplyRemoval.) It is 26 characters, within the limit of 36.
func requestToken() string { return rand.Text() }
