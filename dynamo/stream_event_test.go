package dynamo

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/google/go-cmp/cmp"
	"github.com/stak/inbox/driver"
)

const testStreamARN = "arn:aws:dynamodb:us-east-1:123456789012:table/inbox/stream/2024-01-01T00:00:00.000"

// asJSON decodes the JSON encoding of v into generic values, so that records
// compare as the payload Lambda would send.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("unmarshal %s: %v", raw, err)
	}
	return out
}

// lambdaJSON parses a record as Lambda delivers it, through the events
// package's own decoder.
func lambdaJSON(t *testing.T, payload string) events.DynamoDBEventRecord {
	t.Helper()
	var r events.DynamoDBEventRecord
	if err := json.Unmarshal([]byte(payload), &r); err != nil {
		t.Fatalf("lambda payload: %v", err)
	}
	return r
}

func TestStreamEventRecordConvertsEveryAttributeType(t *testing.T) {
	created := time.Unix(1717243200, 0).UTC()
	rec := types.Record{
		AwsRegion:    aws.String("eu-west-1"),
		EventID:      aws.String("ev-1"),
		EventName:    types.OperationTypeInsert,
		EventSource:  aws.String("aws:dynamodb"),
		EventVersion: aws.String("1.1"),
		Dynamodb: &types.StreamRecord{
			ApproximateCreationDateTime: &created,
			Keys: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: "t#acmeU#ann#alerts"},
				"sk": &types.AttributeValueMemberS{Value: "m#01HZ"},
			},
			NewImage: map[string]types.AttributeValue{
				"s":     &types.AttributeValueMemberS{Value: "text"},
				"n":     &types.AttributeValueMemberN{Value: "-12.5"},
				"b":     &types.AttributeValueMemberB{Value: []byte{0, 1, 2}},
				"t":     &types.AttributeValueMemberBOOL{Value: true},
				"f":     &types.AttributeValueMemberBOOL{Value: false},
				"null":  &types.AttributeValueMemberNULL{Value: true},
				"ss":    &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
				"ns":    &types.AttributeValueMemberNS{Value: []string{"1", "2.5"}},
				"bs":    &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
				"empty": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}},
				"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
					"inner": &types.AttributeValueMemberL{Value: []types.AttributeValue{
						&types.AttributeValueMemberN{Value: "1"},
						&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"deep": &types.AttributeValueMemberS{Value: "x"}}},
						&types.AttributeValueMemberNULL{Value: true},
					}},
				}},
				"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{}},
			},
			SequenceNumber: aws.String("100000000000000000001"),
			SizeBytes:      aws.Int64(321),
			StreamViewType: types.StreamViewTypeNewAndOldImages,
		},
	}
	got, err := eventRecord(rec, testStreamARN)
	if err != nil {
		t.Fatalf("eventRecord: %v", err)
	}
	want := lambdaJSON(t, `{
		"awsRegion": "eu-west-1",
		"eventID": "ev-1",
		"eventName": "INSERT",
		"eventSource": "aws:dynamodb",
		"eventVersion": "1.1",
		"eventSourceARN": "`+testStreamARN+`",
		"dynamodb": {
			"ApproximateCreationDateTime": 1717243200,
			"Keys": {"pk": {"S": "t#acmeU#ann#alerts"}, "sk": {"S": "m#01HZ"}},
			"NewImage": {
				"s": {"S": "text"},
				"n": {"N": "-12.5"},
				"b": {"B": "AAEC"},
				"t": {"BOOL": true},
				"f": {"BOOL": false},
				"null": {"NULL": true},
				"ss": {"SS": ["a", "b"]},
				"ns": {"NS": ["1", "2.5"]},
				"bs": {"BS": ["AQ==", "AgM="]},
				"empty": {"M": {}},
				"m": {"M": {"inner": {"L": [{"N": "1"}, {"M": {"deep": {"S": "x"}}}, {"NULL": true}]}}},
				"l": {"L": []}
			},
			"SequenceNumber": "100000000000000000001",
			"SizeBytes": 321,
			"StreamViewType": "NEW_AND_OLD_IMAGES"
		}
	}`)
	if diff := cmp.Diff(asJSON(t, want), asJSON(t, got)); diff != "" {
		t.Errorf("converted record differs from Lambda's payload (-want +got):\n%s", diff)
	}
	// Spot-check typed accessors too, not just the JSON form.
	img := got.Change.NewImage
	if img["b"].DataType() != events.DataTypeBinary || string(img["b"].Binary()) != "\x00\x01\x02" {
		t.Errorf("binary attribute = %v", img["b"])
	}
	if !img["null"].IsNull() || img["t"].Boolean() != true || img["n"].Number() != "-12.5" {
		t.Errorf("null/bool/number attributes = %v %v %v", img["null"], img["t"], img["n"])
	}
	if got.Change.OldImage != nil || got.UserIdentity != nil {
		t.Errorf("absent OldImage/UserIdentity should stay nil, got %v, %v", got.Change.OldImage, got.UserIdentity)
	}
	if !got.Change.ApproximateCreationDateTime.Equal(created) {
		t.Errorf("ApproximateCreationDateTime = %v, want %v", got.Change.ApproximateCreationDateTime, created)
	}
}

// removedItem is the old image of a read direct message, as the dynamo
// Store writes it.
func removedItem() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk":         &types.AttributeValueMemberS{Value: "t#acmeU#ann#alerts"},
		"sk":         &types.AttributeValueMemberS{Value: "m#01HZ"},
		"kind":       &types.AttributeValueMemberS{Value: "UM"},
		"tenant_key": &types.AttributeValueMemberS{Value: "acme"},
		"inbox_key":  &types.AttributeValueMemberS{Value: "alerts"},
		"uid":        &types.AttributeValueMemberS{Value: "ann"},
		"readat":     &types.AttributeValueMemberN{Value: "1717243000"},
		"expiredat":  &types.AttributeValueMemberN{Value: "1717243100"},
	}
}

func streamRecord(name types.OperationType, identity *types.Identity, oldImage, newImage map[string]types.AttributeValue) types.Record {
	keys := removedItem()
	return types.Record{
		EventID:      aws.String("ev-2"),
		EventName:    name,
		UserIdentity: identity,
		Dynamodb: &types.StreamRecord{
			Keys:           map[string]types.AttributeValue{"pk": keys["pk"], "sk": keys["sk"]},
			OldImage:       oldImage,
			NewImage:       newImage,
			SequenceNumber: aws.String("200"),
			StreamViewType: types.StreamViewTypeOldImage,
		},
	}
}

func TestStreamEventRecordNormalisesLocalTTLRemoval(t *testing.T) {
	ttl := &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}
	user := &types.Identity{Type: aws.String("Other"), PrincipalId: aws.String("someone")}
	tests := []struct {
		name     string
		rec      types.Record
		wantName string
		wantID   *events.DynamoDBUserIdentity
	}{
		{
			name:     "DynamoDB Local TTL deletion becomes AWS's REMOVE",
			rec:      streamRecord("UNKNOWN_TO_SDK_VERSION", nil, removedItem(), nil),
			wantName: "REMOVE",
			wantID:   ttl,
		},
		{
			name:     "any unknown name on an old-image-only record is a TTL removal",
			rec:      streamRecord("", nil, removedItem(), nil),
			wantName: "REMOVE",
			wantID:   ttl,
		},
		{
			name:     "unknown name keeps an identity it already has",
			rec:      streamRecord("UNKNOWN_TO_SDK_VERSION", user, removedItem(), nil),
			wantName: "REMOVE",
			wantID:   &events.DynamoDBUserIdentity{Type: "Other", PrincipalID: "someone"},
		},
		{
			name:     "AWS TTL REMOVE passes through",
			rec:      streamRecord(types.OperationTypeRemove, &types.Identity{Type: aws.String("Service"), PrincipalId: aws.String("dynamodb.amazonaws.com")}, removedItem(), nil),
			wantName: "REMOVE",
			wantID:   ttl,
		},
		{
			name:     "a user's delete stays a REMOVE without identity",
			rec:      streamRecord(types.OperationTypeRemove, nil, removedItem(), nil),
			wantName: "REMOVE",
		},
		{
			name:     "MODIFY with only an old image is not a removal",
			rec:      streamRecord(types.OperationTypeModify, nil, removedItem(), nil),
			wantName: "MODIFY",
		},
		{
			name:     "unknown name with a new image is left alone",
			rec:      streamRecord("UNKNOWN_TO_SDK_VERSION", nil, removedItem(), removedItem()),
			wantName: "UNKNOWN_TO_SDK_VERSION",
		},
		{
			name:     "unknown name without images is left alone",
			rec:      streamRecord("UNKNOWN_TO_SDK_VERSION", nil, nil, nil),
			wantName: "UNKNOWN_TO_SDK_VERSION",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := eventRecord(tc.rec, testStreamARN)
			if err != nil {
				t.Fatalf("eventRecord: %v", err)
			}
			if got.EventName != tc.wantName {
				t.Errorf("EventName = %q, want %q", got.EventName, tc.wantName)
			}
			if diff := cmp.Diff(tc.wantID, got.UserIdentity); diff != "" {
				t.Errorf("UserIdentity (-want +got):\n%s", diff)
			}
			if got.EventSourceArn != testStreamARN || got.EventSource != "aws:dynamodb" {
				t.Errorf("event source = %q %q", got.EventSource, got.EventSourceArn)
			}
		})
	}
}

func TestStreamEventRecordRejectsWhatItCannotConvert(t *testing.T) {
	noSeq := streamRecord(types.OperationTypeRemove, nil, removedItem(), nil)
	noSeq.Dynamodb.SequenceNumber = nil
	unknown := streamRecord(types.OperationTypeRemove, nil, removedItem(), nil)
	unknown.Dynamodb.OldImage["odd"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.UnknownUnionMember{Tag: "X"}}}
	for name, rec := range map[string]types.Record{
		"no sequence number":  noSeq,
		"no stream record":    {EventID: aws.String("ev-3"), EventName: types.OperationTypeRemove},
		"unknown member type": unknown,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := eventRecord(rec, testStreamARN); !errors.Is(err, driver.ErrInvalidInput) {
				t.Errorf("eventRecord error = %v, want ErrInvalidInput", err)
			}
		})
	}
}
