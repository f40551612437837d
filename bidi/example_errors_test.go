package bidi_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// A configuration that cannot work fails Open before any I/O, with an
// error matching ErrInvalidConfig whose text says what to fix.
func ExampleErrInvalidConfig() {
	client := bidi.NewFromConfig(aws.Config{
		Region:      "us west", // not a region
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
	})
	_, err := client.Open(context.Background(), &bidi.OpenInput{EndpointName: "my-endpoint"})
	fmt.Println(errors.Is(err, bidi.ErrInvalidConfig))
	fmt.Println(err)
	// Output:
	// true
	// bidi: endpoint: invalid region "us west": want lower-case letters, digits and hyphens, e.g. us-west-2
}
