package bidi

// OpenInput names the endpoint to stream with and the optional SageMaker
// routing headers. Open validates every field against the service model
// before any network I/O and returns an [*InputValidationError] naming the
// field on failure.
type OpenInput struct {
	// EndpointName is the SageMaker endpoint to invoke. Required: 1 to 63
	// characters, letters, digits and hyphens, starting and ending with a
	// letter or digit.
	EndpointName string

	// TargetVariant selects a production variant
	// (X-Amzn-SageMaker-Target-Variant). Optional; same rules as
	// EndpointName.
	TargetVariant string

	// ModelInvocationPath replaces the path the container's WebSocket is
	// opened on (X-Amzn-SageMaker-Model-Invocation-Path). Optional: at most
	// 100 characters, one or more "/"-separated segments of letters,
	// digits, '-', '.' and '_', with no leading, trailing or doubled "/".
	ModelInvocationPath string

	// ModelQueryString is appended to the container's WebSocket URL
	// (X-Amzn-SageMaker-Model-Query-String). Optional: at most 2048
	// characters of "key=value" pairs joined by '&'; keys start with a
	// letter or digit and continue with letters, digits, '_' and '-';
	// values are non-empty and use unreserved characters (letters, digits,
	// '-', '.', '_', '~') or %XX escapes.
	ModelQueryString string

	// AwaitResponse makes this Open return only once the service answered
	// (see Options.AwaitResponse); false leaves the client's setting.
	AwaitResponse bool
}
