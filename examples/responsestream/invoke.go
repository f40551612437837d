package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"
	"github.com/aws/smithy-go"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
)

// requestBody returns the request for o.api.
func requestBody(o *options) ([]byte, error) {
	if o.api == "lmi" {
		return json.Marshal(schema.LMIRequest{
			Inputs:     schema.Inputs{Text: o.prompt},
			Parameters: &schema.GenerationParameters{MaxNewTokens: o.maxTokens},
			Stream:     true,
		})
	}
	return json.Marshal(schema.ChatCompletionRequest{
		Messages:      []schema.ChatMessage{{Role: "user", Content: schema.TextContent(o.prompt)}},
		MaxTokens:     o.maxTokens,
		Stream:        true,
		StreamOptions: &schema.StreamOptions{IncludeUsage: true},
	})
}

// invoke calls InvokeEndpointWithResponseStream and decodes the bytes of
// its PayloadPart events with a push framing.Decoder, printing the answer
// as it streams and the rebuilt answer at the end.
func invoke(ctx context.Context, client *sagemakerruntime.Client, endpoint string, o *options, out io.Writer) error {
	body, err := requestBody(o)
	if err != nil {
		return err
	}
	in := &sagemakerruntime.InvokeEndpointWithResponseStreamInput{
		EndpointName: aws.String(endpoint),
		Body:         body,
		ContentType:  aws.String("application/json"),
	}
	if o.conn.TargetVariant != "" {
		in.TargetVariant = aws.String(o.conn.TargetVariant)
	}
	fmt.Fprintf(out, "\nyou> %s\n", o.prompt)
	resp, err := client.InvokeEndpointWithResponseStream(ctx, in)
	if err != nil {
		return err
	}
	stream := resp.GetStream()
	defer stream.Close()
	fmt.Fprintf(out, "      [invoked variant %q, model content type %q]\n",
		aws.ToString(resp.InvokedProductionVariant), aws.ToString(resp.ContentType))

	b := &builder{Printer: cli.Printer{Out: out}}
	dec := framing.NewDecoder()
	parts, size := 0, 0
	for ev := range stream.Events() {
		pp, ok := ev.(*types.ResponseStreamMemberPayloadPart)
		if !ok {
			continue // a member this client version does not know
		}
		parts++
		size += len(pp.Value.Bytes)
		dec.Write(pp.Value.Bytes)
		if err := b.drain(dec); err != nil {
			return err
		}
	}
	// The channel closes at the end of the stream and on failure: Err
	// tells which (a *types.ModelStreamError, for one).
	if err := stream.Err(); err != nil {
		b.End()
		return err
	}
	dec.Close()
	if err := b.drain(dec); err != nil {
		return err
	}
	b.End()
	fmt.Fprintf(out, "      [%d PayloadPart events, %d bytes of %s cut anywhere; schema framed %d events]\n",
		parts, size, dec.Format(), b.events)
	return b.report(out)
}

// describe formats the errors of the official client with their fields.
func describe(err error) string {
	var mse *types.ModelStreamError
	var ae smithy.APIError
	switch {
	case errors.As(err, &mse):
		return fmt.Sprintf("the model's stream failed: %s (error code %s): %s",
			mse.ErrorCode(), aws.ToString(mse.ErrorCode_), aws.ToString(mse.Message))
	case errors.As(err, &ae):
		return fmt.Sprintf("%s: %s (%v)", ae.ErrorCode(), ae.ErrorMessage(), err)
	}
	return err.Error()
}
