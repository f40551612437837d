// Package model is a sample SageMaker model container for bidirectional
// streaming: the server side of the WebSocket that SageMaker (or the local
// gateway in examples/gateway) opens to a model at
// ws://localhost:8080/invocations-bidirectional-stream.
//
// [NewHandler] returns an http.Handler that keeps the container contract:
//
//   - GET /ping answers 200 (the health check);
//   - a WebSocket upgrade on any path starts a session (the gateway routes
//     X-Amzn-SageMaker-Model-Invocation-Path to the path and
//     X-Amzn-SageMaker-Model-Query-String to the query string);
//   - any other request gets 426 Upgrade Required.
//
// # What a session does
//
// A binary message (audio) is echoed as a fragmented binary message: frames
// of fragment bytes with FIN=0, then an empty frame with FIN=1.
//
// A text message holding an OpenAI chat request, a JSON object with a
// "messages" array, is answered by a toy reasoning model. With "stream":true
// it streams chat.completion.chunk events as server-sent events, one
// "data: {...}\n\n" per text message: a first chunk with the role, the
// reasoning_content deltas, the content deltas ("You said: " and the last
// user message), a last chunk with finish_reason "stop" and usage, then
// "data: [DONE]\n\n". Without "stream" it sends one chat.completion object.
// Any other text message is echoed as it came.
//
// # Choosing a behaviour per connection
//
// The upgrade request's query string, on top of [Options.Defaults], selects
// the behaviour; an unknown parameter or a bad value refuses the upgrade
// with 400. Every parameter is listed by [QueryHelp]:
//
//	mode=echo            echo text, even chat requests (default mode=chat)
//	fragment=256         bytes per frame of fragmented replies (default 1024)
//	fragment_text=true   fragment text replies too
//	split=7              re-cut the SSE bytes into 7-byte text messages
//	delay=20ms           pause between streamed chat messages
//	hello=true           first send {"hello":…,"path":…,"query":…,"mode":…}
//
// and hooks that make the container misbehave, for testing a gateway or a
// client:
//
//	refuse=503                          refuse the upgrade with HTTP 503
//	close_after=2&close_code=1011&close_reason=boom
//	                                    close after sending 2 messages
//	close_after=2&abrupt=true           drop TCP after 2 messages, no close frame
//	garbage_after=0                     send a text message that is not UTF-8
//	no_pong=true                        read as usual but never answer pings
//	deaf_after=1&hold=1m                stop reading after 1 message, hold 1 min
//
// coder/websocket answers pings and close frames only while a Read is in
// progress, so a deaf session (deaf_after) answers neither: its peer sees
// pongs stop and, when it closes, no close frame in return. A deaf session
// cannot notice that its peer went away; it drops the connection when hold
// expires or the Handler is shut down. no_pong keeps reading and only
// suppresses the pong, so the session still notices a close.
//
// # Shutting down
//
// Sessions run on hijacked connections that http.Server.Shutdown does not
// track: call [Handler.Shutdown] (close frames with 1001) or [Handler.Close]
// (drop the connections) after it.
package model
