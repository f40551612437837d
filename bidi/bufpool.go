package bidi

import "github.com/sagemaker-bidi/sagemaker-bidi/internal/bufpool"

// keepBufferBytes is the largest working buffer (send queue, padding) a
// session keeps while it is not using it; larger ones go back to a pool,
// so that an idle session holds a few KiB whatever it carried before, and
// a busy one reuses pooled buffers instead of allocating.
const keepBufferBytes = 4 << 10

var (
	queuePool = bufpool.Pool{Keep: keepBufferBytes} // send queues (sendPipe.q)
	padPool   = bufpool.Pool{Keep: keepBufferBytes} // padding (Session.pad)
)
