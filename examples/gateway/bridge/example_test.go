package bridge_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/container/model"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/bridge"
)

// A gateway in front of the sample container: the client talks SageMaker's
// protocol, the container WebSocket.
func Example() {
	container := httptest.NewServer(model.NewHandler(model.Options{}))
	defer container.Close()

	g, err := bridge.Start(bridge.Config{
		Options:     bridge.Options{Container: "ws://" + container.Listener.Addr().String()},
		Credentials: aws.Credentials{AccessKeyID: "AKIDLOCAL", SecretAccessKey: "local-secret"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()

	// The client trusts the gateway's certificate, as it would from the
	// file the program writes with -cert-out.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(g.CertificatePEM())
	client := bidi.NewFromConfig(aws.Config{
		Region:      "us-west-2",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDLOCAL", "local-secret", ""),
	}, func(o *bidi.Options) {
		o.BaseEndpoint = aws.String(g.URL())
		o.TLSConfig = &tls.Config{RootCAs: pool}
	})
	defer client.CloseIdleConnections()

	ctx := context.Background()
	sess, err := client.Open(ctx, &bidi.OpenInput{
		EndpointName:     "local",
		ModelQueryString: "mode=echo&close_after=2&close_code=4000&close_reason=enough",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sess.Close()
	resp, _ := sess.Response(ctx)
	fmt.Println("variant:", resp.InvokedProductionVariant)
	for _, text := range []string{"hello", "again", "too many"} {
		sess.Send(ctx, bidi.Text(text))
	}
	for {
		m, err := sess.Recv(ctx)
		var mse *bidi.ModelStreamError
		switch {
		case err == nil:
			fmt.Printf("%s: %s\n", m.Type, m.Data)
			continue
		case errors.As(err, &mse):
			fmt.Printf("ModelStreamError %s: %s\n", mse.ErrorCode_, mse.Message)
		case err == io.EOF:
			fmt.Println("end of stream")
		default:
			fmt.Println(err)
		}
		return
	}
	// Output:
	// variant: AllTraffic
	// UTF8: hello
	// UTF8: again
	// ModelStreamError 4000: Model container closed the WebSocket connection (code 4000, reason "enough")
}
