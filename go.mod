module github.com/stak/inbox

go 1.24

require (
	github.com/aws/aws-lambda-go v1.54.0 // indirect
	github.com/oklog/ulid/v2 v2.1.2 // indirect
)
