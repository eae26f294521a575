package dynamo

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/stak/inbox/driver"
)

// Fixed values of the records Lambda delivers from a DynamoDB stream.
const (
	// eventSource is every record's eventSource.
	eventSource = "aws:dynamodb"
	// ttlIdentityType and ttlPrincipal make the userIdentity of a record
	// whose item DynamoDB's TTL deleted.
	ttlIdentityType = "Service"
	ttlPrincipal    = "dynamodb.amazonaws.com"
)

// eventRecord converts a Streams API record to the record Lambda would
// deliver for it from stream streamARN, image attribute by attribute.
//
// It also normalises a quirk of DynamoDB Local, whose TTL deletions come
// with eventName UNKNOWN_TO_SDK_VERSION and no userIdentity: a record with
// an old image and no new image whose eventName is not INSERT, MODIFY or
// REMOVE becomes the REMOVE that AWS sends for a TTL deletion, with
// userIdentity {type: Service, principalId: dynamodb.amazonaws.com}.
func eventRecord(rec types.Record, streamARN string) (events.DynamoDBEventRecord, error) {
	out := events.DynamoDBEventRecord{
		AWSRegion:      aws.ToString(rec.AwsRegion),
		EventID:        aws.ToString(rec.EventID),
		EventName:      string(rec.EventName),
		EventSource:    eventSource,
		EventVersion:   aws.ToString(rec.EventVersion),
		EventSourceArn: streamARN,
	}
	if id := rec.UserIdentity; id != nil {
		out.UserIdentity = &events.DynamoDBUserIdentity{Type: aws.ToString(id.Type), PrincipalID: aws.ToString(id.PrincipalId)}
	}
	d := rec.Dynamodb
	if d == nil || validSequence(aws.ToString(d.SequenceNumber)) != nil {
		return events.DynamoDBEventRecord{}, fmt.Errorf("%w: stream record %q has no valid sequence number", driver.ErrInvalidInput, out.EventID)
	}
	out.Change = events.DynamoDBStreamRecord{
		SequenceNumber: aws.ToString(d.SequenceNumber),
		SizeBytes:      aws.ToInt64(d.SizeBytes),
		StreamViewType: string(d.StreamViewType),
	}
	if d.ApproximateCreationDateTime != nil {
		out.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *d.ApproximateCreationDateTime}
	}
	var err error
	for _, img := range []struct {
		name string
		from map[string]types.AttributeValue
		to   *map[string]events.DynamoDBAttributeValue
	}{
		{"Keys", d.Keys, &out.Change.Keys},
		{"OldImage", d.OldImage, &out.Change.OldImage},
		{"NewImage", d.NewImage, &out.Change.NewImage},
	} {
		if *img.to, err = attributeMap(img.from); err != nil {
			return events.DynamoDBEventRecord{}, fmt.Errorf("stream record %s: %s: %w", out.Change.SequenceNumber, img.name, err)
		}
	}
	normalizeTTLRemoval(&out)
	return out, nil
}

// normalizeTTLRemoval turns DynamoDB Local's shape of a TTL deletion into
// AWS's (see eventRecord). Records of a known operation are left alone.
func normalizeTTLRemoval(r *events.DynamoDBEventRecord) {
	switch events.DynamoDBOperationType(r.EventName) {
	case events.DynamoDBOperationTypeInsert, events.DynamoDBOperationTypeModify, events.DynamoDBOperationTypeRemove:
		return
	}
	if r.Change.OldImage == nil || r.Change.NewImage != nil {
		return
	}
	r.EventName = string(events.DynamoDBOperationTypeRemove)
	if r.UserIdentity == nil {
		r.UserIdentity = &events.DynamoDBUserIdentity{Type: ttlIdentityType, PrincipalID: ttlPrincipal}
	}
}

// attributeMap converts an image or map value; nil stays nil.
func attributeMap(m map[string]types.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(m))
	for k, v := range m {
		av, err := attributeValue(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = av
	}
	return out, nil
}

// attributeValue converts one attribute value, of any DynamoDB type.
func attributeValue(v types.AttributeValue) (events.DynamoDBAttributeValue, error) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value), nil
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value), nil
	case *types.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value), nil
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value), nil
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute(), nil
	case *types.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value), nil
	case *types.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value), nil
	case *types.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value), nil
	case *types.AttributeValueMemberM:
		m, err := attributeMap(v.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		if m == nil {
			m = map[string]events.DynamoDBAttributeValue{}
		}
		return events.NewMapAttribute(m), nil
	case *types.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			av, err := attributeValue(e)
			if err != nil {
				return events.DynamoDBAttributeValue{}, fmt.Errorf("element %d: %w", i, err)
			}
			l[i] = av
		}
		return events.NewListAttribute(l), nil
	case *types.UnknownUnionMember:
		return events.DynamoDBAttributeValue{}, fmt.Errorf("%w: attribute of unknown type %q", driver.ErrInvalidInput, v.Tag)
	}
	return events.DynamoDBAttributeValue{}, fmt.Errorf("%w: attribute value of type %T", driver.ErrInvalidInput, v)
}
